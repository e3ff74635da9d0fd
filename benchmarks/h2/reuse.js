// App-visible reuse with Node's http2 client, whose HPACK encoder is nghttp2's (every field indexed but :path,
// Authorization and cookie crumbs under 20 bytes never indexed), against the sample with Sample__CacheStats=true:
// of the header values the app got that equal one sent before on their connection, the share that was the instance
// it got before (/stats valueReuse, which counts every connection but the one asking; read before and after, so the
// figures are this run's). The in-process model of the
// same encoder: the benchmark dll's `reuse h2 <profile> nghttp2 [crumbs] [streams]`.
// Usage: node reuse.js PORT PROFILE_FILE CONNECTIONS REQUESTS STREAMS [crumbs]
// Request i of a connection is head i % heads of the .http file, its ${cookie} one of 8 random cookies of 60 to 180
// bytes picked per request, as the in-process profiles render it; with crumbs, the cookie is three crumbs of 24, 10
// and 6 bytes and a short bearer token is added. Prints "RESULT repeated=N same_instance=N share=X".
'use strict';
const http2 = require('http2');
const fs = require('fs');
const [port, profileFile, connections, requests, streams, crumbs] = process.argv.slice(2);
const heads = fs.readFileSync(profileFile, 'utf8').split(/\n\s*\n/).map((head) => head.trim()).filter((head) => head.length > 0);
const forbidden = new Set(['host', 'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te']);
const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const token = (length) => Array.from({ length }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join('');

// The head's path and its fields as Node sends them: names in lower case, in the order of the file.
function render(head, cookies) {
  const lines = head.split('\n');
  const headers = { ':path': lines[0].split(' ')[1] };
  for (const line of lines.slice(1)) {
    const at = line.indexOf(':');
    const name = line.slice(0, at).trim().toLowerCase();
    const value = line.slice(at + 1).trim();
    if (forbidden.has(name)) {
      continue;
    }
    if (name === 'cookie') {
      headers.cookie = crumbs === 'crumbs' ? ['sid=0123456789abcdefghij', 'lang=en-US', 'ab=1-2'] : cookies[Math.floor(Math.random() * cookies.length)];
      continue;
    }
    headers[name] = value;
  }
  if (crumbs === 'crumbs') {
    headers.authorization = 'Bearer eyJhbGciOiJIUzI1NiJ9.e30.c2lnbmF0dXJl';
  }
  return headers;
}

const exchange = (session, headers) => new Promise((resolve, reject) => {
  const stream = session.request(headers);
  let body = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => { body += chunk; });
  stream.on('end', () => resolve(body));
  stream.on('error', reject);
});

const valueReuse = async () => {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  const stats = JSON.parse(await exchange(session, { ':path': '/stats' }));
  await new Promise((resolve) => session.close(resolve));
  return stats.valueReuse;
};

(async () => {
  // The server's totals before and after: what this run's connections added.
  const before = await valueReuse();
  for (let c = 0; c < Number(connections); c++) {
    const cookies = Array.from({ length: 8 }, () => token(60 + Math.floor(Math.random() * 121)));
    const session = http2.connect(`http://127.0.0.1:${port}`);
    for (let i = 0; i < Number(requests); i += Number(streams)) {
      const batch = [];
      for (let k = i; k < Math.min(i + Number(streams), Number(requests)); k++) {
        batch.push(exchange(session, render(heads[k % heads.length], cookies)));
      }
      await Promise.all(batch);
    }
    await new Promise((resolve) => session.close(resolve));
  }

  const after = await valueReuse();
  const repeated = after.repeated - before.repeated;
  const same = after.sameInstance - before.sameInstance;
  console.log(`RESULT repeated=${repeated} same_instance=${same} share=${(same / repeated).toFixed(3)} connections=${after.connections - before.connections}`);
})().catch((error) => { console.error(error); process.exit(1); });
