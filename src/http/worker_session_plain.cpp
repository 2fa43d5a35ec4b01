// WorkerSession over plain TCP (see worker_session_impl.hpp for why it has a file of its own).

#include "worker_session_impl.hpp"

namespace outboxd::http {

template class WorkerSession<PlainStream>;

}  // namespace outboxd::http
