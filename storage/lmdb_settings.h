/* lmdb_settings.h — the LMDB backend's settings (storage/lmdb.c owns their rows). */
#ifndef FRONTDOOR_LMDB_SETTINGS_H
#define FRONTDOOR_LMDB_SETTINGS_H

#include "option.h"

typedef struct fd_lmdb_settings {
    long long map_size;       /* lmdb-map-size: bytes (0 = the backend's default) */
} fd_lmdb_settings;

extern const fd_option_set fd_lmdb_options;

#endif
