/*
 * sbfix.c - LD_PRELOAD shim for sysbench 1.0.20 linked against libmariadb.
 *
 * Why: with --mysql-ignore-errors covering 2013/2006 (or "all"), sysbench's
 * mysql_drv_reconnect() calls mysql_close(con) and then mysql_real_connect(con)
 * on the same caller-allocated MYSQL handle without mysql_init() in between.
 * libmariadb's mysql_close() frees the handle's option storage, so the
 * reconnect dereferences freed memory and sysbench dies with SIGSEGV
 * (upstream akopytov/sysbench issue #527).
 *
 * What: after the real mysql_close(), put a caller-allocated handle back into
 * the state mysql_init() leaves it in, so a following mysql_real_connect() is
 * valid. Handles that libmariadb allocated itself (mysql_init(NULL), free_me
 * set) are freed by mysql_close() and are left alone. sysbench frees its own
 * handle right after its final mysql_close(); the re-init costs one small
 * allocation per connection at exit.
 *
 * Load it into sysbench only (LD_PRELOAD on the sysbench process), never into
 * the server.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <mysql.h>

void STDCALL mysql_close(MYSQL *m)
{
  static void (*real_close)(MYSQL *) = NULL;
  int caller_allocated;

  if (real_close == NULL)
    real_close = (void (*)(MYSQL *))dlsym(RTLD_NEXT, "mysql_close");
  if (m == NULL)
    return;
  caller_allocated = !m->free_me;
  real_close(m);
  if (caller_allocated)
    mysql_init(m);
}
