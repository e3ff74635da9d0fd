// Bursts of parallel streams after an idle pause, on one h2c connection (Node's http2, whose HPACK encoder indexes
// every header, as Chrome's does): what the server allocates per request when each burst finds Kestrel's stream pool
// expired (its pooled streams live 5 s). Usage: node bursts.js PORT ARGS_FILE BURSTS STREAMS IDLE_MS
// ARGS_FILE is compare.sh's traffic/<profile>.args (-H lines, then PATH lines). Prints "RESULT bytes_per_request=N".
'use strict';
const http2 = require('http2');
const fs = require('fs');
const [port, argsFile, bursts, streams, idleMs] = process.argv.slice(2);
const lines = fs.readFileSync(argsFile, 'utf8').split('\n');
const headers = {};
const paths = [];
for (let i = 0; i < lines.length; i++) {
  if (lines[i] === '-H') {
    const line = lines[++i];
    const at = line.indexOf(':');
    const name = line.slice(0, at);
    const value = line.slice(at + 1).trim();
    headers[name] = name in headers ? [].concat(headers[name], value) : value;
  } else if (lines[i].startsWith('PATH ')) {
    paths.push(lines[i].slice(5));
  }
}
const session = http2.connect(`http://127.0.0.1:${port}`);
const request = (path) => new Promise((resolve, reject) => {
  const stream = session.request({ ':path': path, ...headers });
  let body = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => { body += chunk; });
  stream.on('end', () => resolve(body));
  stream.on('error', reject);
});
const stats = async () => JSON.parse(await new Promise((resolve, reject) => {
  const stream = session.request({ ':path': '/stats' });
  let body = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => { body += chunk; });
  stream.on('end', () => resolve(body));
  stream.on('error', reject);
}));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const burst = (n) => Promise.all(Array.from({ length: Number(streams) }, (_, k) => request(paths[(n * Number(streams) + k) % paths.length])));
(async () => {
  // Warm-up without pauses, so that the JIT's tiering (which allocates) is over before the measured bursts.
  for (let n = 0; n < 400; n++) {
    await burst(n);
  }

  // Only the bursts are counted: the idle seconds' own allocations (timers, heartbeats) vary by more than a burst's
  // headers. Each burst is bracketed by two /stats requests; what the second costs beyond a back-to-back pair is the
  // same with and without HeaderCache and with and without headers, so it cancels in the script's differences.
  // The first /stats requests' own first-time work (serializer, JIT) is not a stats request's cost.
  for (let n = 0; n < 20; n++) {
    await stats();
  }
  const first = await stats();
  const second = await stats();
  const statsCost = second.allocatedBytes - first.allocatedBytes;
  let bytes = 0;
  let served = 0;
  for (let n = 1; n <= Number(bursts); n++) {
    await sleep(Number(idleMs));
    const before = await stats();
    await burst(n);
    const after = await stats();
    bytes += after.allocatedBytes - before.allocatedBytes - statsCost;
    served += after.requests - before.requests - 1;
  }
  const requests = Number(bursts) * Number(streams);
  console.log(`RESULT bytes_per_request=${(bytes / requests).toFixed(0)} requests=${requests} server_requests=${served}`);
  session.close();
})().catch((error) => { console.error(error); process.exit(1); });
