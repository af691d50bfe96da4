/* leveldb_settings.h — the LevelDB backend's settings (storage/leveldb.c owns their rows).
 * 0 = the backend's default for each number. */
#ifndef FRONTDOOR_LEVELDB_SETTINGS_H
#define FRONTDOOR_LEVELDB_SETTINGS_H

#include "option.h"

typedef struct fd_leveldb_settings {
    long long block_cache_size;   /* leveldb-block-cache-size: bytes of the LRU block cache */
    long long write_buffer_size;  /* leveldb-write-buffer-size: bytes of memtable before a flush to L0 */
    int       compression;        /* leveldb-compression: FD_LEVELDB_SNAPPY (0) or FD_LEVELDB_NONE */
    long long max_open_files;     /* leveldb-max-open-files */
} fd_leveldb_settings;
enum { FD_LEVELDB_SNAPPY = 0, FD_LEVELDB_NONE = 1 };   /* compression */

extern const fd_option_set fd_leveldb_options;

#endif
