// WorkerSession over TLS (see worker_session_impl.hpp for why it has a file of its own).

#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include "worker_session_impl.hpp"

namespace outboxd::sinks::websocket {

template class WorkerSession<http::TlsStream>;

}  // namespace outboxd::sinks::websocket
