// The watch stream's wire format (src/kube/watch.ts): JSON events one per
// line, split anywhere by the network. A loopback HTTP server writes the bytes;
// what is under test is how they are read. (The informer against a real
// apiserver is test/integration/informer*.test.ts.)
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { MAX_EVENT_BYTES, openWatch, WatchError } from '../../src/kube/watch.js';

type Script = (res: http.ServerResponse, req: http.IncomingMessage) => Promise<void> | void;
let script: Script = () => {};
let server: http.Server;
let base = '';
const seenUrls: string[] = [];

before(async () => {
  server = http.createServer((req, res) => {
    seenUrls.push(req.url ?? '');
    void script(res, req);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => {
  server.closeAllConnections();
  server.close();
});

function kubeconfig(token?: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: base, skipTLSVerify: true }],
    users: [{ name: 'u', ...(token ? { token } : {}) }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

interface Outcome {
  events: Array<{ type: string; obj: unknown }>;
  err: unknown;
  doneCalls: number;
}

async function watchOnce(s: Script, onEvent?: (type: string, obj: unknown) => void, params: Record<string, string | number | boolean | undefined> = {}, kc = kubeconfig()): Promise<Outcome> {
  script = s;
  const out: Outcome = { events: [], err: undefined, doneCalls: 0 };
  await new Promise<void>((resolve) => {
    void openWatch(
      kc,
      base,
      undefined,
      '/apis/g/v1/things',
      params,
      (type, obj) => {
        out.events.push({ type, obj });
        onEvent?.(type, obj);
      },
      (err) => {
        out.doneCalls++;
        out.err = err;
        setImmediate(resolve);
      },
    );
  });
  return out;
}

const ev = (type: string, name: string, extra: Record<string, unknown> = {}) => JSON.stringify({ type, object: { metadata: { name, ...extra } } });

test('events split across chunks anywhere, multi-byte characters included, arrive whole and in order', async () => {
  const lines = [ev('ADDED', 'a', { note: 'ünïcødé ✓ 🚀' }), ev('MODIFIED', 'b'), ev('DELETED', 'a')];
  const bytes = Buffer.from(lines.join('\n') + '\n');
  const out = await watchOnce(async (res) => {
    res.writeHead(200);
    // One byte at a time: every split point, inside a UTF-8 sequence too.
    for (let i = 0; i < bytes.length; i++) {
      res.write(bytes.subarray(i, i + 1));
      if (i % 40 === 0) await new Promise((r) => setImmediate(r));
    }
    res.end();
  });
  assert.deepEqual(
    out.events.map((e) => [e.type, (e.obj as { metadata: { name: string } }).metadata.name]),
    [
      ['ADDED', 'a'],
      ['MODIFIED', 'b'],
      ['DELETED', 'a'],
    ],
  );
  assert.equal((out.events[0]!.obj as { metadata: { note: string } }).metadata.note, 'ünïcødé ✓ 🚀');
  assert.equal(out.err, undefined, 'a stream the server ends is a normal end');
  assert.equal(out.doneCalls, 1);
});

test('the parameters reach the server, with watch=true, and a bearer token from the kubeconfig', async () => {
  let auth: string | undefined;
  seenUrls.length = 0;
  await watchOnce(
    (res, req) => {
      auth = req.headers.authorization;
      res.writeHead(200);
      res.end();
    },
    undefined,
    { sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan', labelSelector: 'a=b', fieldSelector: undefined },
    kubeconfig('s3cret'),
  );
  const u = new URL(seenUrls[0]!, base);
  assert.equal(u.pathname, '/apis/g/v1/things');
  assert.equal(u.searchParams.get('watch'), 'true');
  assert.equal(u.searchParams.get('sendInitialEvents'), 'true');
  assert.equal(u.searchParams.get('resourceVersionMatch'), 'NotOlderThan');
  assert.equal(u.searchParams.get('labelSelector'), 'a=b');
  assert.equal(u.searchParams.has('fieldSelector'), false, 'undefined parameters are left out');
  assert.equal(auth, 'Bearer s3cret');
});

test("a refused watch carries the status code and the server's own message", async () => {
  const out = await watchOnce((res) => {
    res.writeHead(422, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kind: 'Status', status: 'Failure', message: 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided', code: 422 }));
  });
  assert.ok(out.err instanceof WatchError);
  assert.equal((out.err as WatchError).statusCode, 422);
  assert.match((out.err as Error).message, /^HTTP 422: resourceVersionMatch is forbidden/);
  assert.equal(out.events.length, 0);
});

test('a refusal without a Status body still names the status', async () => {
  const out = await watchOnce((res) => {
    res.writeHead(503);
    res.end('upstream down');
  });
  assert.equal((out.err as WatchError).statusCode, 503);
  assert.equal((out.err as Error).message, 'HTTP 503: upstream down');
});

test('a malformed line ends the watch with an error naming it (no event is dropped silently)', async () => {
  const out = await watchOnce((res) => {
    res.writeHead(200);
    res.write(ev('ADDED', 'a') + '\n{"type":"ADDED","object":{"metad\n' + ev('ADDED', 'c') + '\n');
  });
  assert.equal(out.events.length, 1, 'the good event before it arrived');
  assert.ok(out.err instanceof WatchError);
  assert.match((out.err as Error).message, /malformed event .*"metad/);
  assert.equal(out.doneCalls, 1);
});

test('an event without a type is refused', async () => {
  const out = await watchOnce((res) => {
    res.writeHead(200);
    res.write('{"object":{}}\n');
  });
  assert.match((out.err as Error).message, /without a type/);
});

test('an exception of the event callback ends the watch with that error instead of vanishing', async () => {
  const boom = new Error('handler broke');
  const out = await watchOnce(
    (res) => {
      res.writeHead(200);
      res.write(ev('ADDED', 'a') + '\n' + ev('ADDED', 'b') + '\n' + ev('ADDED', 'c') + '\n');
    },
    (_t, obj) => {
      if ((obj as { metadata: { name: string } }).metadata.name === 'b') throw boom;
    },
  );
  assert.equal(out.err, boom);
  assert.equal(out.events.length, 2, 'nothing after the failing event is delivered');
});

test('a line longer than the limit ends the watch instead of growing without bound', async () => {
  const out = await watchOnce(async (res) => {
    res.writeHead(200);
    const chunk = Buffer.alloc(1024 * 1024, 0x61);
    for (let sent = 0; sent <= MAX_EVENT_BYTES + chunk.length && !res.destroyed; sent += chunk.length) {
      if (!res.write(chunk))
        await new Promise<void>((r) => {
          const done = () => {
            res.off('drain', done).off('close', done);
            r();
          };
          res.on('drain', done).on('close', done);
        });
    }
  });
  assert.ok(out.err instanceof WatchError);
  assert.match((out.err as Error).message, /longer than/);
});

test('aborting ends it once, without an error', async () => {
  script = (res) => {
    res.writeHead(200);
    res.write(ev('ADDED', 'a') + '\n');
  };
  let calls = 0;
  let error: unknown = 'unset';
  let aborter: AbortController | undefined;
  await new Promise<void>((resolve) => {
    void openWatch(
      kubeconfig(),
      base,
      undefined,
      '/apis/g/v1/things',
      {},
      () => setImmediate(() => aborter?.abort()),
      (err) => {
        calls++;
        error = err;
        setTimeout(resolve, 50);
      },
    ).then((a) => {
      aborter = a;
    });
  });
  assert.equal(calls, 1);
  assert.equal(error, undefined);
});

test('an unreachable server is an error, reported once', async () => {
  const kc = new KubeConfig();
  kc.loadFromOptions({ clusters: [{ name: 'c', server: 'http://127.0.0.1:1', skipTLSVerify: true }], users: [{ name: 'u' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' });
  const errs: unknown[] = [];
  await new Promise<void>((resolve) => {
    void openWatch(kc, 'http://127.0.0.1:1', undefined, '/x', {}, () => {}, (err) => {
      errs.push(err);
      setTimeout(resolve, 50);
    });
  });
  assert.equal(errs.length, 1);
  assert.match(String((errs[0] as Error).message), /ECONNREFUSED/);
});
