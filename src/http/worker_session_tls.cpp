// WorkerSession over TLS (see worker_session_impl.hpp for why it has a file of its own).

#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include "worker_session_impl.hpp"

namespace outboxd::http {

template class WorkerSession<TlsStream>;

}  // namespace outboxd::http
