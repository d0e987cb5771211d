'use strict';
// The test process (its own sandbox): the only writer of the verdict.
// stdin: one JSON document {nonce, prompt, test, entry_point}; argv: request fd, reply fd.
const fs = require('fs');
const codec = require('/box/_codeloop_codec.js');

const setup = JSON.parse(fs.readFileSync(0, 'utf8'));
const requestFd = Number(process.argv[2]);
const replyFd = Number(process.argv[3]);
const replies = new codec.Lines(replyFd);

function receive() {
  const message = replies.read();
  if (message === null || typeof message !== 'object') {
    throw new Error("the solution's process ended before answering");
  }
  return message;
}

function proxy(name) {
  return (...args) => {
    codec.write(requestFd, { call: name, args: codec.encode(args) });
    const reply = receive();
    if (Object.prototype.hasOwnProperty.call(reply, 'value')) return codec.decode(reply.value);
    const kinds = { TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError };
    const Kind = Object.prototype.hasOwnProperty.call(kinds, reply.raise) ? kinds[reply.raise] : Error;
    throw new Kind(String(reply.message));
  };
}

// The trusted prompt's top-level declarations (the test's helpers). HumanEval-X's
// prompt ends inside the entry point's body, so it is closed first.
function helpers(prompt) {
  const names = [...prompt.matchAll(/^(?:const|let|var|function\*?|async function)\s+([A-Za-z_$][\w$]*)/gm)]
    .map((match) => match[1]);
  for (const closing of ['', '\n}\n', '\n}\n}\n']) {
    try {
      const load = new Function('require', prompt + closing + '\n;return {' + names.join(',') + '};');
      return load(require);
    } catch (error) { /* try the next closing */ }
  }
  return {};
}

try {
  const hello = receive();
  if (hello.load_error !== undefined) {
    process.stderr.write(String(hello.load_error) + '\n');
    process.exit(hello.syntax ? 3 : 1);
  }
  // console.assert only prints; in the test it must fail.
  console.assert = (condition, ...rest) => {
    if (!condition) throw new Error('Assertion failed' + (rest.length ? ': ' + rest.join(' ') : ''));
  };
  const entry = setup.entry_point;
  const scope = setup.prompt ? helpers(setup.prompt) : {};
  delete scope[entry];
  const names = Object.keys(scope).filter((name) => /^[A-Za-z_$][\w$]*$/.test(name));
  const test = new Function('require', ...names, entry, setup.test);
  test(require, ...names.map((name) => scope[name]), proxy(entry));
} catch (error) {
  process.stderr.write(String(error && error.stack || error) + '\n');
  process.exit(1);
}
process.stdout.write('\n' + setup.nonce + '\n');
