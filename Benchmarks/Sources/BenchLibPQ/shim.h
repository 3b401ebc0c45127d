// libpq, PostgreSQL's C client library (Debian: libpq-dev; its headers are under
// /usr/include/postgresql, which pkg-config's libpq entry adds to the include path).
#include <libpq-fe.h>
