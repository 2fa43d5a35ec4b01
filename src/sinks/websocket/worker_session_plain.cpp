// WorkerSession over plain TCP (see worker_session_impl.hpp for why it has a file of its own).

#include "worker_session_impl.hpp"

namespace outboxd::sinks::websocket {

template class WorkerSession<http::PlainStream>;

}  // namespace outboxd::sinks::websocket
