/* metrics.h — the measurements a monitoring stack scrapes: a Prometheus
 * text endpoint (metrics-port, off by default) and INFO latencystats. Module
 * prefix: px_metrics_.
 *
 * What is measured, where:
 *   - per command: calls, failed calls and a latency histogram (from
 *     dispatch until the reply is in the client's buffer): the commands'
 *     records of proxy/backends.h, summed (px_cmd_sum, px_cmd_total) — the
 *     same INFO commandstats and latencystats read;
 *   - per backend (role primary, secondary, draining): calls, errors, in
 *     flight, the latency and wait histograms (px_backend_refresh: the sum
 *     of the backend's records); the proxy's part is latency - wait;
 *   - connections, commands processed, backend swaps, A/B counters.
 * The histograms are the same px_hist INFO reads (INFO backends' p50/p99,
 * INFO latencystats), exported with fixed Prometheus buckets (upper edges
 * from 1 µs to 10 s): a fine bucket is counted in the first Prometheus
 * bucket at or above its upper edge.
 *
 * The endpoint: HTTP/1.0-style, one GET per connection (GET /metrics or
 * GET /), answered with "text/plain; version=0.0.4" and closed; on the
 * loop thread, never blocking (the page is rendered at once and written as
 * the socket takes it). Listens on metrics-port at every `bind` address.
 */
#ifndef FRONTDOOR_METRICS_H
#define FRONTDOOR_METRICS_H

#include "backends.h"
#include "../storage/command.h"

/* Listen on metrics-port (nothing when 0). -1 with err when it cannot. */
int  px_metrics_init(char *err, size_t errlen);
void px_metrics_shutdown(void);
/* The exposition text into o (appended). */
void px_metrics_render(resp_out *o);
/* INFO latencystats: latency_percentiles_usec_<cmd>:p50=..,p99=..,p99.9=.. */
void px_metrics_latencystats(resp_out *o);

/* Register this feature's hooks (hooks.h): main.c, once at start-up. */
void px_metrics_hooks(void);

#endif
