'use strict';
// The solution's process (its own sandbox): load the program, then answer calls.
// argv: request fd, reply fd. What this process sends can only be plain values.
const fs = require('fs');
const codec = require('/box/_codeloop_codec.js');

const requestFd = Number(process.argv[2]);
const replyFd = Number(process.argv[3]);
const requests = new codec.Lines(requestFd);

let lookup;
try {
  const source = fs.readFileSync('/box/main.js', 'utf8');
  // The program runs as a function body, so that its top-level declarations stay
  // reachable by name through the closure returned at its end.
  const body = source + '\n;return (__codeloopName) => eval(__codeloopName);\n';
  const load = new Function('require', 'module', 'exports', '__filename', '__dirname', body);
  const module = { exports: {} };
  lookup = load(require, module, module.exports, '/box/main.js', '/box');
} catch (error) {
  const text = error instanceof SyntaxError ? 'SyntaxError: ' + error.message : String(error && error.stack || error);
  codec.write(replyFd, { load_error: text, syntax: error instanceof SyntaxError });
  process.exit(1);
}
codec.write(replyFd, { ready: true });

for (;;) {
  const message = requests.read();
  if (message === null) break;
  let reply;
  try {
    if (!/^[A-Za-z_$][\w$]*$/.test(message.call)) throw new Error('bad name');
    const fn = lookup(message.call);
    const args = codec.decode(message.args);
    reply = { value: codec.encode(fn(...args)) };
  } catch (error) {
    let name = 'Error';
    let text = '';
    try { name = String(error && error.name); text = String(error && error.message).slice(0, 1000); } catch (e) { /* unprintable */ }
    reply = { raise: name, message: text };
  }
  codec.write(replyFd, reply);
}
process.exit(0);
