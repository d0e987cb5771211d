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

// Calls of the solution so far: a test that ends without one passes any program, so
// it ends with the vacuous line (the nonce + ':vacuous'), never the nonce.
let calls = 0;

// A NaN or an infinity anywhere in what the solution returned is a wrong answer, whatever
// the test's comparison says (Math.abs(NaN - y) > 1e-4 is false).
function nonFinite(value, depth = 0) {
  if (typeof value === 'number') return Number.isFinite(value) ? null : String(value);
  if (depth > 1000 || value === null || typeof value !== 'object') return null;
  for (const item of Array.isArray(value) ? value : Object.values(value)) {
    const found = nonFinite(item, depth + 1);
    if (found !== null) return found;
  }
  return null;
}

function proxy(name) {
  return (...args) => {
    codec.write(requestFd, { call: name, args: codec.encode(args) });
    calls += 1;
    const reply = receive();
    if (Object.prototype.hasOwnProperty.call(reply, 'value')) {
      const value = codec.decode(reply.value);
      const found = nonFinite(value);
      if (found !== null) {
        fs.writeSync(2, 'the solution returned ' + found + ' where a finite number is expected\n');
        process.exit(1);
      }
      return value;
    }
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
process.stdout.write('\n' + setup.nonce + (calls === 0 ? ':vacuous' : '') + '\n');
