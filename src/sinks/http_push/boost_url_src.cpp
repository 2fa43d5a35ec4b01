// Boost.URL compiled once, header-only style (Debian ships its headers in libboost1.81-dev,
// not a library to link).
#include <boost/url/src.hpp>
