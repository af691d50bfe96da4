#!/usr/bin/python3
"""Differential test of geo, DUMP/RESTORE and the sorted-set extras
(ZUNION/ZINTER/ZDIFF and their STORE forms, ZINTERCARD, ZRANGESTORE,
ZRANDMEMBER, ZMPOP, LMPOP): the same commands go to a real redis-server 7.0
and to frontdoor, replies compared byte for byte in RESP2 and in RESP3
(ZRANDMEMBER: its random picks are compared by shape and membership).
DUMP payloads are compared byte for byte where 7.0's encoding is
deterministic, and payloads cross over: redis-server's DUMP RESTOREd on
frontdoor and frontdoor's on redis-server, contents compared after.

Every key carries the hash tag {g} so that the multi-key cases share one
slot on the redis-cluster backend.
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fdtest import (Tests, diff_pair, parse, norm_sorted, norm_pairs,
                    check, eq)

T = Tests(case_timeout=60)


def run(steps, protos=(2, 3)):
    for proto in protos:
        d = diff_pair(proto == 3)
        for st in steps:
            if callable(st):
                st(d)
                continue
            norm = None
            if st and st[0] == "sorted":
                norm, st = norm_sorted, st[1:]
            elif st and st[0] == "pairs":
                norm, st = norm_pairs, st[1:]
            d.cmd(*st, norm=norm)
        if d.mismatches:
            raise AssertionError("RESP%d:\n%s" % (proto, d.report()))
        d.finish()


def case(fn):
    T.add(fn.__name__, fn)
    return fn


# ============================================================ geo

K = "{g}pts"
PLACES = [
    ("13.361389", "38.115556", "Palermo"), ("15.087269", "37.502669", "Catania"),
    ("12.496366", "41.902782", "Rome"), ("2.352222", "48.856613", "Paris"),
    ("-0.127758", "51.507351", "London"), ("139.691706", "35.689487", "Tokyo"),
    ("-73.935242", "40.730610", "NYC"),
    # near the poles (the geohash limit is +-85.05112878)
    ("0", "85.05", "north0"), ("90", "85.0", "north90"), ("-179.5", "84.9", "northW"),
    ("179.5", "84.95", "northE"), ("10", "-85.05", "south10"), ("-100", "-84.99", "southW"),
    # either side of the antimeridian
    ("179.99", "0.5", "amE1"), ("-179.99", "0.5", "amW1"), ("179.5", "-10", "amE2"),
    ("-179.5", "-10", "amW2"), ("180", "0", "am180"), ("-180", "0", "am-180"),
    # ties: the same point under several names
    ("7.0", "45.0", "tieB"), ("7.0", "45.0", "tieA"), ("7.0", "45.0", "tieC"), ("7.0", "45.0", "tie"),
]


def geo_setup():
    args = ["GEOADD", K]
    for lon, lat, m in PLACES:
        args += [lon, lat, m]
    return tuple(args)


@case
def geoadd_options_and_errors():
    run([
        geo_setup(), ("ZCARD", K), ("ZRANGE", K, "0", "-1", "WITHSCORES"),
        ("GEOADD", K, "13.361389", "38.115556", "Palermo"),
        ("GEOADD", K, "CH", "13.4", "38.1", "Palermo", "1", "1", "newp"),
        ("GEOADD", K, "NX", "1", "2", "Palermo", "3", "4", "nx1"), ("GEOPOS", K, "Palermo", "nx1"),
        ("GEOADD", K, "XX", "1", "2", "Palermo", "3", "4", "xx1"), ("GEOPOS", K, "Palermo", "xx1"),
        ("GEOADD", K, "XX", "CH", "5", "6", "Palermo"), ("GEOADD", K, "NX", "XX", "1", "1", "a"),
        ("GEOADD", K, "GT", "1", "1", "a"), ("GEOADD", K, "1", "1"), ("GEOADD", K, "CH", "1", "1"),
        ("GEOADD", K, "181", "1", "bad"), ("GEOADD", K, "1", "86", "bad"), ("GEOADD", K, "x", "1", "bad"),
        ("GEOADD", K, "1", "1", "ok", "200", "1", "bad"), ("ZSCORE", K, "ok"),
        ("GEOADD", "{g}xxnew", "XX", "1", "1", "a"), ("EXISTS", "{g}xxnew"),
        ("SET", "{g}str", "v"), ("GEOADD", "{g}str", "1", "1", "a"), ("GEOADD", "{g}str", "1", "100", "a"),
        ("GEOADD", "{g}k2", "-180", "-85.05112878", "min", "180", "85.05112878", "max"),
        ("ZRANGE", "{g}k2", "0", "-1", "WITHSCORES"),
    ])


@case
def geopos_geohash_geodist():
    run([
        geo_setup(),
        ("GEOPOS", K, "Palermo", "nope", "north0", "am180", "am-180", "southW"), ("GEOPOS", K),
        ("GEOPOS", "{g}none", "a", "b"), ("GEOHASH", K, "Palermo", "nope", "Tokyo", "northE", "am-180"),
        ("GEOHASH", "{g}none", "a"), ("GEOHASH", K),
        ("GEODIST", K, "Palermo", "Catania"), ("GEODIST", K, "Palermo", "Catania", "km"),
        ("GEODIST", K, "Palermo", "Catania", "MI"), ("GEODIST", K, "Palermo", "Catania", "ft"),
        ("GEODIST", K, "amE1", "amW1"), ("GEODIST", K, "north0", "northE", "km"),
        ("GEODIST", K, "Palermo", "nope"), ("GEODIST", "{g}none", "a", "b"),
        ("GEODIST", K, "Palermo", "Catania", "parsecs"), ("GEODIST", K, "a", "b", "km", "x"),
        ("GEODIST", K, "tieA", "tieB"),
        ("SET", "{g}str", "v"), ("GEOPOS", "{g}str", "a"), ("GEOHASH", "{g}str", "a"),
        ("GEODIST", "{g}str", "a", "b"), ("GEODIST", "{g}str", "a", "b", "bad"),
    ])


SEARCH_OPTS = [[], ["WITHDIST"], ["WITHCOORD"], ["WITHHASH"], ["WITHDIST", "WITHCOORD", "WITHHASH"],
               ["ASC"], ["DESC"], ["COUNT", "3"], ["COUNT", "3", "DESC"], ["COUNT", "2", "ANY"],
               ["COUNT", "100", "ANY", "WITHDIST"], ["ASC", "COUNT", "1", "WITHCOORD"]]


@case
def georadius_family():
    steps = [geo_setup()]
    centres = [("13.36", "38.11", "200", "km"), ("7", "45", "1", "m"), ("180", "0", "200", "km"),
               ("-180", "0", "3000", "km"), ("179.9", "0.4", "60", "km"), ("0", "85", "1500", "km"),
               ("-179", "85", "500", "km"), ("10", "-85", "2000", "km"), ("0", "0", "20000", "km"),
               ("13", "38", "100", "mi"), ("13", "38", "500000", "ft")]
    for lon, lat, r, u in centres:
        for opts in SEARCH_OPTS:
            steps.append(("GEORADIUS_RO", K, lon, lat, r, u) + tuple(opts))
    for m, r, u in [("Palermo", "300", "km"), ("tieA", "0", "m"), ("tie", "10", "km"),
                    ("amE1", "100", "km"), ("north0", "1000", "km"), ("am-180", "50", "km")]:
        for opts in SEARCH_OPTS[:8]:
            steps.append(("GEORADIUSBYMEMBER_RO", K, m, r, u) + tuple(opts))
            steps.append(("GEORADIUSBYMEMBER", K, m, r, u) + tuple(opts))
    steps += [
        ("GEORADIUS", K, "13", "38", "200", "km", "WITHDIST"),
        ("GEORADIUS", K, "13", "38", "200", "km", "STORE", "{g}dst"), ("ZRANGE", "{g}dst", "0", "-1", "WITHSCORES"),
        ("GEORADIUS", K, "13", "38", "200", "km", "STOREDIST", "{g}dst"), ("ZRANGE", "{g}dst", "0", "-1", "WITHSCORES"),
        ("GEORADIUS", K, "13", "38", "200", "km", "COUNT", "1", "STORE", "{g}dst"), ("ZRANGE", "{g}dst", "0", "-1"),
        ("GEORADIUS", K, "0", "0", "1", "m", "STORE", "{g}dst"), ("EXISTS", "{g}dst"),
        ("GEORADIUS", K, "13", "38", "200", "km", "STORE", "{g}dst", "WITHDIST"),
        ("GEORADIUS_RO", K, "13", "38", "200", "km", "STORE", "{g}dst"),
        ("GEORADIUSBYMEMBER", K, "Palermo", "200", "km", "STORE", "{g}dst2"), ("ZRANGE", "{g}dst2", "0", "-1", "WITHSCORES"),
        ("GEORADIUSBYMEMBER", K, "nope", "200", "km"), ("GEORADIUS", "{g}none", "1", "1", "1", "km"),
        ("GEORADIUS", "{g}none", "1", "1", "1", "km", "STORE", "{g}dst"),
        ("GEORADIUS", K, "1", "1", "1", "parsecs"), ("GEORADIUS", K, "1", "1", "-1", "km"),
        ("GEORADIUS", K, "200", "1", "1", "km"), ("GEORADIUS", K, "x", "1", "1", "km"),
        ("GEORADIUS", K, "1", "1", "1", "km", "COUNT", "0"), ("GEORADIUS", K, "1", "1", "1", "km", "COUNT", "-1"),
        ("GEORADIUS", K, "1", "1", "1", "km", "ANY"), ("GEORADIUS", K, "1", "1", "1", "km", "BOGUS"),
        ("GEORADIUS", K, "1", "1", "1", "km", "COUNT"), ("GEORADIUS", K, "1", "1", "1", "km", "STORE"),
        ("SET", "{g}str", "v"), ("GEORADIUS", "{g}str", "1", "1", "1", "km"),
        ("GEORADIUSBYMEMBER", "{g}str", "a", "1", "km"),
    ]
    run(steps)


@case
def geosearch_and_store():
    steps = [geo_setup()]
    froms = [("FROMLONLAT", "13.36", "38.11"), ("FROMMEMBER", "Palermo"), ("FROMLONLAT", "180", "0"),
             ("FROMLONLAT", "-179.99", "0.5"), ("FROMMEMBER", "north0"), ("FROMMEMBER", "tie"),
             ("FROMLONLAT", "10", "-85")]
    bys = [("BYRADIUS", "300", "km"), ("BYBOX", "400", "400", "km"), ("BYBOX", "5000", "100", "km"),
           ("BYRADIUS", "0", "m"), ("BYBOX", "1", "1", "m"), ("BYRADIUS", "1000", "mi")]
    for f in froms:
        for b in bys:
            for opts in (SEARCH_OPTS[0], SEARCH_OPTS[4], ["COUNT", "2"], ["COUNT", "2", "ANY"], ["DESC"]):
                steps.append(("GEOSEARCH", K) + f + b + tuple(opts))
    steps += [
        ("GEOSEARCHSTORE", "{g}dst", K, "FROMLONLAT", "13", "38", "BYRADIUS", "300", "km"),
        ("ZRANGE", "{g}dst", "0", "-1", "WITHSCORES"),
        ("GEOSEARCHSTORE", "{g}dst", K, "FROMLONLAT", "13", "38", "BYRADIUS", "300", "km", "STOREDIST"),
        ("ZRANGE", "{g}dst", "0", "-1", "WITHSCORES"),
        ("GEOSEARCHSTORE", "{g}dst", K, "FROMMEMBER", "tie", "BYBOX", "10", "10", "km", "COUNT", "2", "DESC"),
        ("ZRANGE", "{g}dst", "0", "-1", "WITHSCORES"),
        ("GEOSEARCHSTORE", "{g}dst", K, "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"), ("EXISTS", "{g}dst"),
        ("SET", "{g}dst", "str"), ("GEOSEARCHSTORE", "{g}dst", K, "FROMMEMBER", "Rome", "BYRADIUS", "1", "km"),
        ("TYPE", "{g}dst"), ("GEOSEARCHSTORE", "{g}dst", "{g}none", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"),
        ("EXISTS", "{g}dst"),
        ("GEOSEARCHSTORE", "{g}dst", K, "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m", "WITHDIST"),
        ("GEOSEARCH", K, "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m", "STOREDIST"),
        ("GEOSEARCH", K, "FROMMEMBER", "nope", "BYRADIUS", "1", "m"),
        ("GEOSEARCH", K, "FROMLONLAT", "0", "0", "FROMMEMBER", "Rome", "BYRADIUS", "1", "m"),
        ("GEOSEARCH", K, "BYRADIUS", "1", "m"), ("GEOSEARCH", K, "FROMLONLAT", "0", "0", "COUNT", "1"),
        ("GEOSEARCH", K, "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m", "BYBOX", "1", "1", "m"),
        ("GEOSEARCH", K, "FROMLONLAT", "0", "0", "BYBOX", "-1", "1", "m"),
        ("GEOSEARCH", K, "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m", "ANY"),
        ("GEOSEARCH", "{g}none", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"),
        ("GEOSEARCH", "{g}none", "FROMMEMBER", "x", "BYRADIUS", "1", "m"),
        ("SET", "{g}str", "v"), ("GEOSEARCH", "{g}str", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"),
        ("GEOSEARCHSTORE", "{g}dst", "{g}str", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"),
    ]
    run(steps)


@case
def geo_random_points():
    rnd = random.Random(int(os.environ.get("FD_SEED", "7")))
    args = ["GEOADD", K]
    for i in range(400):
        args += ["%.6f" % rnd.uniform(-180, 180), "%.6f" % rnd.uniform(-85, 85), "p%d" % i]
    for i in range(60):   # a cluster near the antimeridian and the poles
        args += ["%.6f" % rnd.choice([rnd.uniform(179, 180), rnd.uniform(-180, -179)]),
                 "%.6f" % rnd.uniform(-85, 85), "am%d" % i]
        args += ["%.6f" % rnd.uniform(-180, 180), "%.6f" % rnd.choice([rnd.uniform(84, 85.05), rnd.uniform(-85.05, -84)]),
                 "pole%d" % i]
    steps = [tuple(args)]
    for i in range(120):
        lon, lat = "%.4f" % rnd.uniform(-180, 180), "%.4f" % rnd.uniform(-85, 85)
        if i % 3 == 0:
            lon = "%.4f" % rnd.choice([179.9, -179.9, 180, -180])
        if i % 5 == 0:
            lat = "%.4f" % rnd.choice([84.9, -84.9, 85.05, -85.05])
        r = str(rnd.choice([1, 50, 500, 2000, 8000]))
        opts = rnd.choice(SEARCH_OPTS)
        steps.append(("GEOSEARCH", K, "FROMLONLAT", lon, lat, "BYRADIUS", r, "km") + tuple(opts))
        steps.append(("GEOSEARCH", K, "FROMLONLAT", lon, lat, "BYBOX", r, str(int(r) * 2), "km") + tuple(opts))
    run(steps)


# ============================================================ sorted-set extras

Z1, Z2, Z3, S1, DST = "{g}z1", "{g}z2", "{g}z3", "{g}s1", "{g}dst"
ZSETUP = [
    ("ZADD", Z1, "1", "a", "2", "b", "3", "c", "-inf", "ninf", "inf", "pinf"),
    ("ZADD", Z2, "10", "b", "20", "c", "30", "d", "inf", "ninf", "-inf", "pinf"),
    ("ZADD", Z3, "0.5", "a", "0.25", "c", "7", "e"),
    ("SADD", S1, "a", "c", "x", "1"),
    ("SET", "{g}str", "v"),
]


@case
def zunion_zinter_zdiff():
    steps = list(ZSETUP)
    for op in ("ZUNION", "ZINTER"):
        steps += [
            (op, "1", Z1), (op, "2", Z1, Z2), (op, "2", Z1, Z2, "WITHSCORES"), (op, "3", Z1, Z2, Z3, "WITHSCORES"),
            (op, "2", Z1, S1, "WITHSCORES"), (op, "2", Z1, Z2, "WEIGHTS", "2", "0.5", "WITHSCORES"),
            (op, "2", Z1, Z2, "WEIGHTS", "0", "1", "WITHSCORES"), (op, "2", Z1, Z2, "AGGREGATE", "MIN", "WITHSCORES"),
            (op, "2", Z1, Z2, "AGGREGATE", "max", "WITHSCORES"), (op, "2", Z1, Z2, "aggregate", "sum", "withscores"),
            (op, "3", Z1, Z2, S1, "WEIGHTS", "-1", "2", "3", "AGGREGATE", "MAX", "WITHSCORES"),
            (op, "2", Z1, "{g}none", "WITHSCORES"), (op, "2", "{g}none", "{g}none2"),
            (op, "2", Z1, Z1, "WITHSCORES"),
            (op, "0", Z1), (op, "-1", Z1), (op, "x", Z1), (op, "3", Z1, Z2), (op, "1", Z1, "WEIGHTS"),
            (op, "1", Z1, "WEIGHTS", "x"), (op, "1", Z1, "WEIGHTS", "1", "2"), (op, "1", Z1, "AGGREGATE", "avg"),
            (op, "1", Z1, "AGGREGATE"), (op, "1", Z1, "BOGUS"), (op, "2", Z1, "{g}str"),
            (op, "2", "{g}str", Z1, "BOGUS"), (op, "1", Z1, "LIMIT", "1"),
        ]
    steps += [
        ("ZDIFF", "1", Z1), ("ZDIFF", "2", Z1, Z2, "WITHSCORES"), ("ZDIFF", "3", Z1, Z2, Z3, "WITHSCORES"),
        ("ZDIFF", "2", Z1, S1, "WITHSCORES"), ("ZDIFF", "2", S1, Z1, "WITHSCORES"), ("ZDIFF", "2", "{g}none", Z1),
        ("ZDIFF", "2", Z1, "{g}none", "WITHSCORES"), ("ZDIFF", "2", Z1, Z2, "WEIGHTS", "1", "1"),
        ("ZDIFF", "2", Z1, Z2, "AGGREGATE", "MIN"), ("ZDIFF", "0", Z1), ("ZDIFF", "2", Z1, "{g}str"),
    ]
    for op in ("ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"):
        steps += [
            (op, DST, "2", Z1, Z2), ("ZRANGE", DST, "0", "-1", "WITHSCORES"), ("TTL", DST),
            (op, DST, "3", Z1, Z3, S1), ("ZRANGE", DST, "0", "-1", "WITHSCORES"),
            (op, DST, "1", "{g}none"), ("EXISTS", DST),
            ("SET", DST, "x", "EX", "100"), (op, DST, "1", Z1), ("TYPE", DST), ("TTL", DST),
            (op, Z3, "2", Z3, Z1), ("ZRANGE", Z3, "0", "-1", "WITHSCORES"),
            (op, DST, "2", Z1, Z2, "WITHSCORES"), (op, DST, "0", Z1), (op, DST, "2", Z1),
            (op, DST, "2", Z1, "{g}str"), (op, "{g}str", "1", Z1), ("TYPE", "{g}str"), ("SET", "{g}str", "v"),
        ]
    steps += [
        ("ZUNIONSTORE", DST, "2", Z1, Z2, "WEIGHTS", "2", "3", "AGGREGATE", "MIN"), ("ZRANGE", DST, "0", "-1", "WITHSCORES"),
        ("ZINTERSTORE", DST, "2", Z1, Z2, "AGGREGATE", "MAX"), ("ZRANGE", DST, "0", "-1", "WITHSCORES"),
    ]
    run(steps)


@case
def zintercard_and_zrangestore():
    steps = list(ZSETUP) + [
        ("ZINTERCARD", "1", Z1), ("ZINTERCARD", "2", Z1, Z2), ("ZINTERCARD", "2", Z1, Z2, "LIMIT", "1"),
        ("ZINTERCARD", "2", Z1, Z2, "LIMIT", "0"), ("ZINTERCARD", "2", Z1, Z2, "LIMIT", "100"),
        ("ZINTERCARD", "2", Z1, S1), ("ZINTERCARD", "2", Z1, "{g}none"), ("ZINTERCARD", "0", Z1),
        ("ZINTERCARD", "2", Z1), ("ZINTERCARD", "1", Z1, "LIMIT", "-1"), ("ZINTERCARD", "1", Z1, "LIMIT", "x"),
        ("ZINTERCARD", "1", Z1, "LIMIT"), ("ZINTERCARD", "1", Z1, "WITHSCORES"), ("ZINTERCARD", "1", Z1, "WEIGHTS", "1"),
        ("ZINTERCARD", "2", Z1, "{g}str"), ("ZINTERCARD", "x", Z1),
        ("ZRANGESTORE", DST, Z1, "0", "-1"), ("ZRANGE", DST, "0", "-1", "WITHSCORES"),
        ("ZRANGESTORE", DST, Z1, "1", "2"), ("ZRANGE", DST, "0", "-1", "WITHSCORES"),
        ("ZRANGESTORE", DST, Z1, "0", "1", "REV"), ("ZRANGE", DST, "0", "-1", "WITHSCORES"),
        ("ZRANGESTORE", DST, Z1, "(1", "3", "BYSCORE"), ("ZRANGE", DST, "0", "-1", "WITHSCORES"),
        ("ZRANGESTORE", DST, Z1, "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "1", "2"), ("ZRANGE", DST, "0", "-1", "WITHSCORES"),
        ("ZRANGESTORE", DST, Z1, "[a", "[c", "BYLEX"), ("ZRANGE", DST, "0", "-1", "WITHSCORES"),
        ("ZRANGESTORE", DST, Z1, "5", "10"), ("EXISTS", DST),
        ("ZRANGESTORE", DST, "{g}none", "0", "-1"), ("ZRANGESTORE", DST, Z1, "0", "-1", "WITHSCORES"),
        ("ZRANGESTORE", DST, Z1, "0", "-1", "LIMIT", "0", "1"), ("ZRANGESTORE", DST, Z1, "x", "1"),
        ("ZRANGESTORE", DST, Z1, "a", "1", "BYSCORE"), ("ZRANGESTORE", DST, Z1, "a", "b", "BYLEX"),
        ("ZRANGESTORE", DST, Z1, "0", "1", "LIMIT", "x", "1", "BYSCORE"), ("ZRANGESTORE", DST, "{g}str", "0", "1"),
        ("SET", DST, "v"), ("ZRANGESTORE", DST, Z1, "0", "0"), ("TYPE", DST),
        ("ZRANGE", Z1, "(1", "3", "BYSCORE", "LIMIT", "0", "1", "WITHSCORES"),
        ("ZADD", "{g}lex", "0", "a", "0", "b", "0", "c", "0", "d"), ("ZRANGE", "{g}lex", "[c", "-", "BYLEX", "REV"),
        ("ZRANGE", "{g}lex", "(d", "(a", "BYLEX", "REV", "LIMIT", "1", "5"),
        ("ZRANGESTORE", DST, "{g}lex", "[b", "+", "BYLEX", "LIMIT", "1", "-1"), ("ZRANGE", DST, "0", "-1", "WITHSCORES"),
    ]
    run(steps)


def rand_same(members):
    """ZRANDMEMBER replies: same shape; every member one of the set with its score."""
    def shape(raw):
        v = parse(raw)
        if isinstance(v, (bytes, str)) or v is None or isinstance(v, Exception):
            if isinstance(v, bytes):
                check(v in members, "not a member", v)
                return "bulk"
            return repr(v)
        out = []
        for e in v:
            if isinstance(e, list):
                check(e[0] in members and float(e[1]) == members[e[0]], "bad pair", e)
                out.append("pair")
            else:
                out.append("m" if e in members else "s")
        return (type(v).__name__, len(v), tuple(out))

    def same(a, b):
        try:
            return shape(a) == shape(b)
        except AssertionError:
            return False
    return same


@case
def zrandmember_shapes():
    members = {b"a": 1.0, b"b": 2.0, b"c": 3.0, b"d": 4.0, b"e": 5.0}
    same = rand_same(members)

    def st(d):
        for args in [("ZRANDMEMBER", "{g}z"), ("ZRANDMEMBER", "{g}z", "1"), ("ZRANDMEMBER", "{g}z", "3"),
                     ("ZRANDMEMBER", "{g}z", "5"), ("ZRANDMEMBER", "{g}z", "50"), ("ZRANDMEMBER", "{g}z", "-3"),
                     ("ZRANDMEMBER", "{g}z", "-20"), ("ZRANDMEMBER", "{g}z", "0"),
                     ("ZRANDMEMBER", "{g}z", "3", "WITHSCORES"), ("ZRANDMEMBER", "{g}z", "-7", "WITHSCORES"),
                     ("ZRANDMEMBER", "{g}z", "9", "WITHSCORES"), ("ZRANDMEMBER", "{g}z", "1", "withscores"),
                     ("ZRANDMEMBER", "{g}z", "0", "WITHSCORES")]:
            for _ in range(5):
                d.cmd(*args, same=same)
        a, b = d.cmd("ZRANDMEMBER", "{g}z", "5")
        eq(sorted(parse(b)), sorted(members), "ZRANDMEMBER 5 is the whole set")
    run([("ZADD", "{g}z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"), st,
         ("ZRANDMEMBER", "{g}none"), ("ZRANDMEMBER", "{g}none", "3"), ("ZRANDMEMBER", "{g}none", "-3", "WITHSCORES"),
         ("ZRANDMEMBER", "{g}z", "x"), ("ZRANDMEMBER", "{g}z", "1", "bogus"), ("ZRANDMEMBER", "{g}z", "1", "WITHSCORES", "x"),
         ("ZRANDMEMBER", "{g}z", "-9223372036854775808"), ("ZRANDMEMBER", "{g}z", "4611686018427387904", "WITHSCORES"),
         ("ZRANDMEMBER", "{g}none", "-4611686018427387904", "WITHSCORES"), ("ZRANDMEMBER", "{g}z", "9223372036854775807"),
         ("SET", "{g}str", "v"), ("ZRANDMEMBER", "{g}str"), ("ZRANDMEMBER", "{g}str", "1"),
         ("ZRANDMEMBER", "{g}str", "x")])


@case
def zmpop_lmpop():
    run([
        ("ZADD", Z1, "1", "a", "2", "b", "3", "c", "4", "d"), ("ZADD", Z2, "5", "x"),
        ("ZMPOP", "1", Z1, "MIN"), ("ZMPOP", "1", Z1, "MAX", "COUNT", "2"), ("ZMPOP", "2", "{g}none", Z1, "min", "count", "10"),
        ("EXISTS", Z1), ("ZMPOP", "2", Z1, Z2, "MAX"), ("ZMPOP", "2", Z1, Z2, "MAX"),
        ("ZMPOP", "0", Z1, "MIN"), ("ZMPOP", "x", Z1, "MIN"), ("ZMPOP", "1", Z1, "MIDDLE"),
        ("ZMPOP", "1", Z1, "MIN", "COUNT", "0"), ("ZMPOP", "1", Z1, "MIN", "COUNT", "-1"), ("ZMPOP", "1", Z1, "MIN", "COUNT"),
        ("ZMPOP", "1", Z1, "MIN", "COUNT", "1", "COUNT", "1"), ("ZMPOP", "1", Z1, "MIN", "BOGUS"),
        ("SET", "{g}str", "v"), ("ZMPOP", "2", "{g}none", "{g}str", "MIN"), ("ZADD", Z1, "1", "a"),
        ("ZMPOP", "2", Z1, "{g}str", "MIN"),
        ("RPUSH", "{g}l1", "a", "b", "c", "d", "e"), ("RPUSH", "{g}l2", "x"),
        ("LMPOP", "1", "{g}l1", "LEFT"), ("LMPOP", "1", "{g}l1", "RIGHT", "COUNT", "2"),
        ("LMPOP", "2", "{g}none", "{g}l1", "left", "count", "10"), ("EXISTS", "{g}l1"),
        ("LMPOP", "2", "{g}l1", "{g}l2", "RIGHT"), ("LMPOP", "2", "{g}l1", "{g}l2", "RIGHT"),
        ("LMPOP", "0", "{g}l1", "LEFT"), ("LMPOP", "x", "{g}l1", "LEFT"), ("LMPOP", "1", "{g}l1", "UP"),
        ("LMPOP", "1", "{g}l1", "LEFT", "COUNT", "0"),
        ("LMPOP", "1", "{g}l1", "LEFT", "COUNT", "x"), ("LMPOP", "1", "{g}l1", "LEFT", "COUNT"),
        ("LMPOP", "1", "{g}l1", "LEFT", "COUNT", "1", "COUNT", "2"), ("LMPOP", "2", "{g}none", "{g}str", "LEFT"),
        ("RPUSH", "{g}l1", "a"), ("LMPOP", "2", "{g}l1", "{g}str", "LEFT"),
        ("RPUSH", "{g}big", *["e%d" % i for i in range(300)]), ("LMPOP", "1", "{g}big", "RIGHT", "COUNT", "299"),
        ("LRANGE", "{g}big", "0", "-1"),
    ])


@case
def lpop_zpop_share_the_cores():
    """LPOP/RPOP and ZPOPMIN/ZPOPMAX now run on the pop cores LMPOP/ZMPOP use."""
    run([("RPUSH", "{g}l", "a", "b", "c", "d", "e", "f"), ("LPOP", "{g}l"), ("RPOP", "{g}l", "2"),
         ("LPOP", "{g}l", "0"), ("LPOP", "{g}l", "10"), ("EXISTS", "{g}l"), ("LPOP", "{g}l", "1"),
         ("ZADD", "{g}z", "1", "a", "2", "b", "3", "c", "4", "d"), ("ZPOPMIN", "{g}z"), ("ZPOPMAX", "{g}z", "2"),
         ("ZPOPMIN", "{g}z", "0"), ("ZPOPMAX", "{g}z", "5"), ("EXISTS", "{g}z"), ("ZPOPMIN", "{g}z", "1")])


@case
def mpop_numkeys_past_the_keys():
    """numkeys counts MIN/LEFT as a key: a syntax error on one server; a
    cluster sees two keys of different slots first (CROSSSLOT, as Redis
    Cluster itself), so this case is skipped there."""
    run([("ZADD", Z1, "1", "a"), ("RPUSH", "{g}l1", "a"),
         ("ZMPOP", "2", Z1, "MIN"), ("LMPOP", "2", "{g}l1", "LEFT")])


# ============================================================ DUMP / RESTORE

def dump_values():
    """(name, setup commands) whose 7.0 DUMP is deterministic."""
    return [
        ("int", [("SET", "{g}k", "12345")]), ("negint", [("SET", "{g}k", "-2147483648")]),
        ("bigint", [("SET", "{g}k", "9223372036854775807")]), ("raw", [("SET", "{g}k", "hello")]),
        ("empty", [("SET", "{g}k", "")]), ("lzf", [("SET", "{g}k", "abc" * 100)]),
        ("incompressible", [("SET", "{g}k", "".join(chr(33 + (i * 7919) % 90) for i in range(60)))]),
        ("list", [("RPUSH", "{g}k", "a", "1", "-5", "xyz" * 30, "")]),
        ("biglist", [("RPUSH", "{g}k", *["element-%d" % i * 3 for i in range(2000)])]),
        ("intset", [("SADD", "{g}k", "3", "1", "-2", "100000", "5000000000")]),
        ("hash", [("HSET", "{g}k", "a", "1", "b", "two", "c", "")]),
        ("zset", [("ZADD", "{g}k", "1", "a", "2.5", "b", "-inf", "c", "inf", "d", "2.5", "a2")]),
        ("bigzset", [("ZADD", "{g}k", *[x for i in range(200) for x in (str(i * 0.5), "m%d" % i)])]),
    ]


@case
def dump_bytes_match():
    steps = []
    for name, setup in dump_values():
        steps += [("DEL", "{g}k")] + setup + [("DUMP", "{g}k")]
    steps += [("DUMP", "{g}none")]
    run(steps)


def contents(c, key):
    t = parse(c.cmd("TYPE", key))
    t = t.decode() if isinstance(t, bytes) else str(t)
    if t == "string":
        return (t, c.cmd("GET", key))
    if t == "list":
        return (t, c.cmd("LRANGE", key, "0", "-1"))
    if t == "set":
        return (t, sorted(parse(c.cmd("SMEMBERS", key))))
    if t == "hash":
        return (t, sorted(parse(c.cmd("HGETALL", key))))
    if t == "zset":
        return (t, c.cmd("ZRANGE", key, "0", "-1", "WITHSCORES"))
    return (t, None)


@case
def dump_restore_cross():
    """DUMP on one server, RESTORE on the other; contents must be equal."""
    values = dump_values() + [
        ("bighash", [("HSET", "{g}k", *[x for i in range(200) for x in ("f%d" % i, "v%d" % i)])]),
        ("unorderedhash", [("HSET", "{g}k", "zz", "1", "aa", "2", "mm", "3")]),
        ("strset", [("SADD", "{g}k", "a", "b", "c")]), ("bigset", [("SADD", "{g}k", *["s%d" % i for i in range(600)])]),
        ("longhashval", [("HSET", "{g}k", "f", "v" * 100)]), ("longzmember", [("ZADD", "{g}k", "1", "m" * 100)]),
    ]
    d = diff_pair()
    bad = []
    for name, setup in values:
        for src, dst in ((d.ref, d.fd), (d.fd, d.ref)):
            for c in (d.ref, d.fd):
                c.cmd("DEL", "{g}k", "{g}r")
            for st in setup:
                src.cmd(*st)
            payload = parse(src.cmd("DUMP", "{g}k"))
            r = dst.cmd("RESTORE", "{g}r", "0", payload)
            if r != b"+OK\r\n":
                bad.append((name, "restore", r))
                continue
            if contents(src, "{g}k") != contents(dst, "{g}r"):
                bad.append((name, "contents", contents(src, "{g}k"), contents(dst, "{g}r")))
            # and the restored value dumps back to something the source takes
            back = parse(dst.cmd("DUMP", "{g}r"))
            src.cmd("DEL", "{g}r")
            r = src.cmd("RESTORE", "{g}r", "0", back)
            if r != b"+OK\r\n" or contents(src, "{g}k") != contents(src, "{g}r"):
                bad.append((name, "round trip", r))
    check(not bad, "cross RESTORE failures", *bad[:10])
    d.finish()


@case
def restore_options_and_errors():
    def st(d):
        good = parse(d.ref.cmd("DUMP", "{g}src"))
        zs = parse(d.ref.cmd("DUMP", "{g}zsrc"))
        bad_crc = good[:-1] + bytes([good[-1] ^ 1])
        bad_ver = good[:-10] + b"\x0b\x00" + good[-8:]
        for args in [
            ("RESTORE", "{g}n", "0", good), ("GET", "{g}n"), ("RESTORE", "{g}n", "0", good),
            ("RESTORE", "{g}n", "0", good, "REPLACE"), ("RESTORE", "{g}n", "0", zs, "REPLACE"), ("TYPE", "{g}n"),
            ("RESTORE", "{g}t", "100000", good), ("PTTL", "{g}t"),
            ("RESTORE", "{g}a", "1", good, "ABSTTL"), ("EXISTS", "{g}a"),
            ("RESTORE", "{g}n", "1", good, "ABSTTL", "REPLACE"), ("EXISTS", "{g}n"),
            ("RESTORE", "{g}i", "0", good, "IDLETIME", "10"), ("RESTORE", "{g}f", "0", good, "FREQ", "5"),
            ("RESTORE", "{g}x", "0", good, "IDLETIME", "-1"), ("RESTORE", "{g}x", "0", good, "FREQ", "256"),
            ("RESTORE", "{g}x", "0", good, "FREQ", "-1"), ("RESTORE", "{g}x", "0", good, "IDLETIME", "1", "FREQ", "1"),
            ("RESTORE", "{g}x", "0", good, "IDLETIME", "x"), ("RESTORE", "{g}x", "0", good, "IDLETIME"),
            ("RESTORE", "{g}x", "0", good, "BOGUS"), ("RESTORE", "{g}x", "-1", good), ("RESTORE", "{g}x", "x", good),
            ("RESTORE", "{g}x", "0", bad_crc), ("RESTORE", "{g}x", "0", bad_ver), ("RESTORE", "{g}x", "0", "short"),
            ("RESTORE", "{g}x", "0", ""), ("EXISTS", "{g}x"), ("RESTORE", "{g}n", "0", "junk"),
            ("RESTORE", "{g}n", "-1", "junk", "REPLACE"),
            ("RESTORE", "{g}e", "0", b"\x0f\x01\x02" + b"\x0a\x00" + b"\x00" * 8),
        ]:
            same = None
            if args[0] == "PTTL":
                from fdtest import ttl_close
                same = ttl_close(2500)
            d.cmd(*args, same=same)
    run([("SET", "{g}src", "value"), ("ZADD", "{g}zsrc", "1", "a"), st])


if __name__ == "__main__":
    T.main()
