/* capture.h — frontdoor's traffic capture: every command a client sends,
 * with its arrival time and client id, appended to a file that
 * `fdload --replay FILE` plays back against any Redis-protocol server.
 * Module prefix: px_capture_.
 *
 * Switches: the directives capture-file (a path; "" = off), capture-max-size
 * (bytes; the capture stops by itself once the file would pass it; 0 = no
 * cap), capture-sample (share of clients recorded, by client id: whole
 * sessions are kept or left out, so each recorded client's order is
 * complete) and capture-hash (yes: keys and values replaced by a keyed hash
 * of the same length, so sizes and key reuse survive but the data does
 * not; numbers and a list of option words are kept so the commands still
 * run). CONFIG SET capture-file starts, switches or ("") stops a capture;
 * FRONTDOOR CAPTURE START [path] | STOP | STATUS does the same at runtime.
 *
 * Cost: the hook is one load and branch per command while off; while on,
 * one memcpy of the command's bytes (already RESP as received) into a
 * 256 KB buffer, written out with write(2) when full and every 100 ms (a
 * page-cache append, as redis-server's AOF with appendfsync no). AUTH and
 * HELLO are never recorded (they carry passwords). With capture-hash, a
 * command larger than the buffer (256 KB) is not recorded (counted as
 * skipped in FRONTDOOR CAPTURE STATUS); without it, it is written as is.
 *
 * File format ("FDCAP1"), little-endian:
 *   header   8 bytes  "FDCAP1\n\0"
 *            8 bytes  u64 wall-clock ns (CLOCK_REALTIME) at the start
 *   records  8 bytes  u64 ns since the start (monotonic)
 *            8 bytes  u64 client id (frontdoor's CLIENT ID)
 *            4 bytes  u32 length of the command's bytes
 *            4 bytes  u32 flags (PX_CAPTURE_F_*)
 *            length   the command as a RESP multibulk (inline commands are
 *                     re-encoded as multibulk)
 * A file cut short (a crash) is valid up to its last complete record.
 */
#ifndef FRONTDOOR_CAPTURE_H
#define FRONTDOOR_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#define PX_CAPTURE_MAGIC "FDCAP1\n"     /* 8 bytes with its NUL */
#define PX_CAPTURE_HEADER_LEN 16
#define PX_CAPTURE_RECORD_LEN 24
#define PX_CAPTURE_F_HASHED 1u

typedef struct px_capture_record {
    uint64_t t_ns;
    uint64_t client;
    uint32_t len;
    uint32_t flags;
} px_capture_record;

#ifndef PX_CAPTURE_FORMAT_ONLY
#include "../protocol/resp.h"

/* Non-zero while a capture may be running (read by the hook in px_dispatch). */
extern int px_capture_armed;

/* The hook: record one command of client `client` (raw/rawlen: its bytes
 * as received when multibulk, NULL for inline). Never fails the command: a
 * write error stops the capture (logged). */
void px_capture_command(uint64_t client, int argc, const resp_arg *argv, const char *raw, size_t rawlen);

/* Follow px_cfg.capture_* (called after start-up, CONFIG SET and reload):
 * opens, switches or closes the capture file. -1 with err when the file
 * cannot be opened (the capture is then off). */
int  px_capture_apply(char *err, size_t errlen);
/* Flush and close (shutdown, STOP). */
void px_capture_stop(void);
/* FRONTDOOR CAPTURE START [path] | STOP | STATUS: argv[1] is "CAPTURE". */
struct px_conn;
void px_capture_cmd(struct px_conn *c, int argc, resp_arg *argv);
/* Register this feature's hooks (hooks.h): main.c, once at start-up. */
void px_capture_hooks(void);
#endif

#endif
