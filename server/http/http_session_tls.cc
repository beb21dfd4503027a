#include "server/http/http_session_impl.h"

namespace tessera {

template class HttpSession<TlsStream>;

}  // namespace tessera
