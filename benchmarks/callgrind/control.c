/* Callgrind's client requests, for ConnectionPathCount (connection-path-count): the counts start at the first measured
 * request and end after the last one, so start-up, the JIT and the warm-up are not counted. Outside valgrind the
 * requests are a few instructions that do nothing. count.sh builds this into a shared library. */
#include <valgrind/callgrind.h>

void cg_zero(void) { CALLGRIND_ZERO_STATS; }

void cg_dump(void) { CALLGRIND_DUMP_STATS_AT("measured"); }
