// apps.js — the node client libraries an application uses, run against a
// server: `node apps.js <case> <port>` prints one JSON line {ok, ...} and
// exits 0 when the case holds, 1 (with the reason) when not. Run by
// tests/integration/test_apps.py; the libraries are in ./node_modules
// (tests/setup-debian.sh --test: npm ci here).
'use strict';
const [, , which, portArg, directArg] = process.argv;
const port = Number(portArg);
// the redis-server behind frontdoor (redis/redis-cluster backends), to publish
// on directly, bypassing frontdoor; absent on the other backends
const directPort = directArg ? Number(directArg) : 0;
const assert = require('assert');

function done(obj) { console.log(JSON.stringify(Object.assign({ ok: true }, obj))); process.exit(0); }
function fail(e) { console.log(JSON.stringify({ ok: false, error: String(e && e.stack || e) })); process.exit(1); }
setTimeout(() => fail(new Error('timed out after 40 s')), 40000).unref();

const cases = {
  async ioredis_multi() {
    const Redis = require('ioredis');
    const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1 });
    await r.connect();
    const res = await r.multi().set('io:a', '1').incr('io:a').get('io:a').exec();
    assert.deepStrictEqual(res, [[null, 'OK'], [null, 2], [null, '2']]);
    // an error queued: EXECABORT reaches the caller
    let aborted = null;
    try { await r.multi().set('io:b', '1').call('nosuchcommand').exec(); } catch (e) { aborted = e.message; }
    assert.ok(aborted && /EXECABORT/.test(aborted), 'EXECABORT expected, got ' + aborted);
    assert.strictEqual(await r.exists('io:b'), 0);
    r.disconnect();
    done({ res });
  },
  async ioredis_definecommand() {
    const Redis = require('ioredis');
    const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1 });
    await r.connect();
    r.defineCommand('addx', { numberOfKeys: 1, lua: "return redis.call('incrby', KEYS[1], ARGV[1])" });
    const a = await r.addx('io:n', 3);
    await r.script('FLUSH');          // EVALSHA -> NOSCRIPT -> EVAL fallback
    const b = await r.addx('io:n', 4);
    const p = await r.pipeline().addx('io:n', 1).addx('io:n', 1).exec();
    assert.deepStrictEqual([a, b, p], [3, 7, [[null, 8], [null, 9]]]);
    r.disconnect();
    done({ a, b });
  },
  async node_redis_multi() {
    const { createClient } = require('redis');
    const c = createClient({ url: `redis://127.0.0.1:${port}` });
    c.on('error', () => {});
    await c.connect();
    const res = await c.multi().set('nr:a', '1').incr('nr:a').get('nr:a').exec();
    assert.deepStrictEqual(res, ['OK', 2, '2']);
    await c.watch('nr:a');
    const other = c.duplicate();
    other.on('error', () => {});
    await other.connect();
    await other.set('nr:a', '10');
    let watchErr = null;
    try { await c.multi().incr('nr:a').exec(); } catch (e) { watchErr = e.constructor.name; }
    assert.strictEqual(watchErr, 'WatchError');
    await other.quit();
    await c.quit();
    done({ res, watchErr });
  },
  async rate_limiter_flexible() {
    const Redis = require('ioredis');
    const { RateLimiterRedis } = require('rate-limiter-flexible');
    const r = new Redis({ port, host: '127.0.0.1', enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    await new Promise((res) => r.once('ready', res));
    const lim = new RateLimiterRedis({ storeClient: r, keyPrefix: 'rlf', points: 2, duration: 60 });
    const first = await lim.consume('user1');
    const second = await lim.consume('user1');
    let refused = null;
    try { await lim.consume('user1'); } catch (e) {
      if (e instanceof Error) throw e;   // a store error, not a refusal
      refused = e;
    }
    assert.ok(refused, 'the third point of two must be refused');
    assert.strictEqual(first.remainingPoints, 1);
    assert.strictEqual(second.remainingPoints, 0);
    assert.strictEqual(refused.remainingPoints, 0);
    assert.ok(refused.msBeforeNext > 0 && refused.msBeforeNext <= 60000);
    r.disconnect();
    done({ remaining: [first.remainingPoints, second.remainingPoints], msBeforeNext: refused.msBeforeNext });
  },
  // Pub/sub: a subscriber on a channel and a pattern receives, in order, what
  // another client publishes through frontdoor (and, on the redis backends,
  // what a client publishes on the redis-server itself).
  async ioredis_subscriber() {
    const Redis = require('ioredis');
    const opts = { port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1 };
    const sub = new Redis(opts);
    const pub = new Redis(opts);
    await sub.connect();
    await pub.connect();
    const got = [];
    let want = 0;
    let wake = null;
    const arrived = () => { if (wake && got.length >= want) { const w = wake; wake = null; w(); } };
    sub.on('message', (ch, msg) => { got.push(['message', ch, msg]); arrived(); });
    sub.on('pmessage', (pat, ch, msg) => { got.push(['pmessage', pat, ch, msg]); arrived(); });
    const waitFor = (n, what) => new Promise((res, rej) => {
      want = n; wake = res; arrived();
      setTimeout(() => rej(new Error(what + ': ' + got.length + ' of ' + n + ' messages: ' +
        JSON.stringify(got.slice(-3)))), 5000);
    });
    assert.strictEqual(await sub.subscribe('io:news'), 1);
    assert.strictEqual(await sub.psubscribe('io:alerts.*'), 2);
    const expect = [];
    for (let i = 0; i < 50; i++) {
      if (i % 3 === 2) {
        await pub.publish('io:alerts.' + i, 'a' + i);
        expect.push(['pmessage', 'io:alerts.*', 'io:alerts.' + i, 'a' + i]);
      } else {
        await pub.publish('io:news', 'n' + i);
        expect.push(['message', 'io:news', 'n' + i]);
      }
      await pub.publish('io:other', 'x');          // matches nothing: never delivered
    }
    await waitFor(expect.length, 'through frontdoor');
    assert.deepStrictEqual(got, expect);
    let direct = 0;
    if (directPort) {
      const d = new Redis({ port: directPort, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1 });
      await d.connect();
      await d.publish('io:news', 'direct-n');
      await d.publish('io:alerts.disk', 'direct-a');
      expect.push(['message', 'io:news', 'direct-n'], ['pmessage', 'io:alerts.*', 'io:alerts.disk', 'direct-a']);
      await waitFor(expect.length, 'published on redis-server directly');
      assert.deepStrictEqual(got, expect);
      d.disconnect();
      direct = 2;
    }
    // by name: ioredis 5.4's argument-less unsubscribe() never resolves while a
    // pattern is still subscribed (on redis-server 7.0 too)
    assert.strictEqual(await sub.unsubscribe('io:news'), 1);
    assert.strictEqual(await sub.punsubscribe('io:alerts.*'), 0);
    // unsubscribed from everything: back to normal commands on the same connection
    assert.strictEqual(await sub.set('io:after', 'ok'), 'OK');
    sub.disconnect();
    pub.disconnect();
    done({ received: got.length, direct });
  },
  async node_redis_subscriber() {
    const { createClient } = require('redis');
    const c = createClient({ url: `redis://127.0.0.1:${port}` });
    c.on('error', () => {});
    await c.connect();
    const sub = c.duplicate();
    sub.on('error', () => {});
    await sub.connect();
    const got = [];
    let want = 0;
    let wake = null;
    const arrived = () => { if (wake && got.length >= want) { const w = wake; wake = null; w(); } };
    await sub.subscribe('nr:news', (msg, ch) => { got.push([ch, msg]); arrived(); });
    await sub.pSubscribe('nr:alerts.*', (msg, ch) => { got.push(['p:' + ch, msg]); arrived(); });
    const waitFor = (n, what) => new Promise((res, rej) => {
      want = n; wake = res; arrived();
      setTimeout(() => rej(new Error(what + ': ' + got.length + ' of ' + n + ' messages: ' +
        JSON.stringify(got.slice(-3)))), 5000);
    });
    const expect = [];
    for (let i = 0; i < 50; i++) {
      const pattern = i % 4 === 3;
      const ch = pattern ? 'nr:alerts.' + i : 'nr:news';
      const n = await c.publish(ch, 'm' + i);
      assert.ok(n >= 0);
      expect.push([pattern ? 'p:' + ch : ch, 'm' + i]);
    }
    await waitFor(expect.length, 'through frontdoor');
    assert.deepStrictEqual(got, expect);
    let direct = 0;
    if (directPort) {
      const d = createClient({ url: `redis://127.0.0.1:${directPort}` });
      d.on('error', () => {});
      await d.connect();
      await d.publish('nr:news', 'direct-n');
      await d.publish('nr:alerts.cpu', 'direct-a');
      expect.push(['nr:news', 'direct-n'], ['p:nr:alerts.cpu', 'direct-a']);
      await waitFor(expect.length, 'published on redis-server directly');
      assert.deepStrictEqual(got, expect);
      await d.quit();
      direct = 2;
    }
    await sub.unsubscribe('nr:news');
    await sub.pUnsubscribe('nr:alerts.*');
    // unsubscribed from everything: a normal command on the same connection
    assert.strictEqual(await sub.set('nr:after', 'ok'), 'OK');
    await sub.quit();
    await c.quit();
    done({ received: got.length, direct });
  },
  async bullmq() {
    const { Queue, Worker, QueueEvents } = require('bullmq');
    const connection = { host: '127.0.0.1', port, maxRetriesPerRequest: null };
    const q = new Queue('fdq', { connection });
    const errors = [];
    q.on('error', (e) => errors.push('queue: ' + e.message));
    const n = 100;   /* issue 14's acceptance: a queue and a worker completing 100 jobs */
    let completed = 0;
    const results = [];
    const w = new Worker('fdq', async (job) => job.data.x * 2, { connection });
    w.on('error', (e) => errors.push('worker: ' + e.message));
    w.on('failed', (job, e) => errors.push('job failed: ' + e.message));
    const all = new Promise((res) => w.on('completed', (job, rv) => { results.push(rv); if (++completed === n) res(); }));
    for (let i = 1; i <= n; i++) await q.add('double', { x: i });
    const timeout = new Promise((_, rej) => setTimeout(() => rej(new Error('jobs not completed in 20 s; errors: ' +
      JSON.stringify(errors.slice(0, 5)))), 20000));
    await Promise.race([all, timeout]);
    await w.close();
    await q.close();
    results.sort((a, b) => a - b);
    assert.deepStrictEqual(results, Array.from({ length: n }, (_, i) => 2 * (i + 1)));
    done({ completed: results.length, errors: errors.slice(0, 5) });
  },
};

(async () => {
  if (!cases[which]) fail(new Error('no case ' + which));
  await cases[which]();
})().catch(fail);
