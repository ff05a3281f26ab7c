// Preloaded into a Node program (`node --require <this file> …`) by test-support's
// `Served::start_node_on`: the program's first `listen()` serves on the socket the test
// bound and handed over as descriptor 3, whatever port or host it asked for. The test
// binds the port once; no other process can take it between a choice and a bind.
// The variables that asked for it are removed, so programs this one starts do not inherit
// them.
'use strict';
const net = require('node:net');

const fd = Number(process.env.BOTCRAFT_LISTEN_FD);
delete process.env.BOTCRAFT_LISTEN_FD;
delete process.env.NODE_OPTIONS;
if (!Number.isInteger(fd) || fd < 3) {
  throw new Error('listen-on-fd.cjs: BOTCRAFT_LISTEN_FD must name a handed descriptor (3 or more)');
}

const listen = net.Server.prototype.listen;
let handed = false;
net.Server.prototype.listen = function (...args) {
  if (handed) {
    return listen.apply(this, args);
  }
  handed = true;
  const callback = args.find((arg) => typeof arg === 'function');
  return callback ? listen.call(this, { fd }, callback) : listen.call(this, { fd });
};
