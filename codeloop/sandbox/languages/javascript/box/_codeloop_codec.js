'use strict';
// Type-strict plain values over JSON lines, and blocking line I/O on pipe fds.
// JSON's own types carry null, booleans, finite numbers, strings and arrays; a JSON
// object is always a tag: {"n": "NaN"|"Infinity"|"-Infinity"|"-0"} numbers JSON
// lacks, {"o": [[key, value], ...]} a plain object, {"u": 1} undefined,
// {"b": "123"} a BigInt. Anything else (class instances, functions, Proxies, Maps,
// objects with a prototype of their own) cannot be encoded.
const fs = require('fs');

const LIMIT = 64 << 20;

function encode(value, depth = 0) {
  if (depth > 1000) throw new TypeError('value nested too deeply');
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return value;
  if (value === undefined) return { u: 1 };
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return { n: 'NaN' };
    if (value === Infinity) return { n: 'Infinity' };
    if (value === -Infinity) return { n: '-Infinity' };
    if (Object.is(value, -0)) return { n: '-0' };
    return value;
  }
  if (typeof value === 'bigint') return { b: value.toString() };
  if (Array.isArray(value) && Object.getPrototypeOf(value) === Array.prototype) {
    const out = [];
    for (let i = 0; i < value.length; i++) out.push(encode(value[i], depth + 1));
    return out;
  }
  if (typeof value === 'object') {
    const proto = Object.getPrototypeOf(value);
    if (proto === Object.prototype || proto === null) {
      const out = [];
      for (const key of Object.keys(value)) out.push([key, encode(value[key], depth + 1)]);
      return { o: out };
    }
  }
  throw new TypeError('cannot pass a value of type ' + typeof value + ' between processes');
}

function decode(data) {
  if (data === null || typeof data === 'boolean' || typeof data === 'string') return data;
  if (typeof data === 'number') return data;
  if (Array.isArray(data)) return data.map(decode);
  if (typeof data === 'object') {
    const keys = Object.keys(data);
    if (keys.length === 1) {
      const tag = keys[0];
      const body = data[tag];
      if (tag === 'u' && body === 1) return undefined;
      if (tag === 'n') {
        const numbers = { NaN: NaN, Infinity: Infinity, '-Infinity': -Infinity, '-0': -0 };
        if (Object.prototype.hasOwnProperty.call(numbers, body)) return numbers[body];
      }
      if (tag === 'b' && typeof body === 'string' && /^-?[0-9]+$/.test(body)) return BigInt(body);
      if (tag === 'o' && Array.isArray(body)) {
        const out = {};
        for (const pair of body) {
          if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string') break;
          Object.defineProperty(out, pair[0], {
            value: decode(pair[1]), enumerable: true, writable: true, configurable: true,
          });
        }
        if (Object.keys(out).length === body.length) return out;
      }
    }
  }
  throw new Error('malformed value');
}

class Lines {
  constructor(fd) { this.fd = fd; this.buffer = Buffer.alloc(0); }
  // The next line as parsed JSON, or null at the end of the stream.
  read() {
    for (;;) {
      const end = this.buffer.indexOf(10);
      if (end >= 0) {
        const line = this.buffer.subarray(0, end).toString('utf8');
        this.buffer = this.buffer.subarray(end + 1);
        return JSON.parse(line);
      }
      if (this.buffer.length > LIMIT) throw new Error('message too large');
      const chunk = Buffer.alloc(65536);
      let got;
      try {
        got = fs.readSync(this.fd, chunk, 0, chunk.length, null);
      } catch (error) {
        if (error.code === 'EAGAIN') continue;
        if (error.code === 'EOF') return null;
        throw error;
      }
      if (got === 0) return null;
      this.buffer = Buffer.concat([this.buffer, chunk.subarray(0, got)]);
    }
  }
}

function write(fd, message) {
  const data = Buffer.from(JSON.stringify(message) + '\n', 'utf8');
  let offset = 0;
  while (offset < data.length) offset += fs.writeSync(fd, data, offset, data.length - offset);
}

module.exports = { encode, decode, Lines, write };
