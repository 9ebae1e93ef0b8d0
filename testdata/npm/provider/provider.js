// provider.js is a capgate provider process written in Node.js, for the tests that show the
// provider protocol (proto/capgate/provider/v1) is not Go-only: capgate starts it with its own
// supervisor (internal/providers), exactly as it starts a program built with sdk/provider.
//
//	node provider.js [--print] [--overreach] [--ignore-deadline] [--ignore-shutdown] [--proto=PATH] MANIFEST
//
// MANIFEST is a signed manifest JSON file, returned verbatim by GetManifest. The one capability
// it serves, any id ending in ".echo", answers {"echo": params} after params.delay_ms (0 by
// default), reports a "read" effect, the evidence {"call": call_id} of type "echo.v1" and one
// progress message; a call whose deadline comes first answers timeout at the deadline.
// ValidateParams refuses text "forbidden". Flags that misbehave, for the host's tests:
// --print writes to standard output before the handshake (a line that looks like one too);
// --overreach reports a "write" effect instead of "read"; --ignore-deadline answers after delay_ms
// whatever the deadline; --ignore-shutdown never answers go-plugin's Shutdown.
//
// What go-plugin (v1.8.0) asks of a plugin not written in Go, and this script does:
//   - the magic cookie (CAPGATE_PROVIDER=capgate-provider-protocol) in its environment;
//   - an app protocol version picked from PLUGIN_PROTOCOL_VERSIONS, the highest both speak;
//   - a unix socket in PLUGIN_UNIX_SOCKET_DIR (the OS temporary folder when unset);
//   - one handshake line on standard output, CORE|APP|unix|PATH|grpc|CERT, CORE 1, CERT empty
//     without AutoMTLS, then "|true" when PLUGIN_MULTIPLEX_GRPC is set: the host refuses a
//     plugin that does not announce multiplexing when it asked for it;
//   - with PLUGIN_MULTIPLEX_GRPC=true (capgate sets it), yamux on the one connection the host
//     makes: the host is the yamux client and every gRPC connection it opens, the first one
//     included, is a yamux stream; plain HTTP/2 on the socket is not understood;
//   - plugin.GRPCController.Shutdown, or each stop waits two seconds before its kill;
//   - grpc.health.v1.Health reporting "plugin" SERVING (go-plugin's Ping; capgate does not
//     ping, other hosts do).
// plugin.GRPCBroker and plugin.GRPCStdio are optional: the host closes its broker and its stdio
// copy when they answer UNIMPLEMENTED. Without the broker the provider cannot reach capgate's
// HostService (InvokeRequest.host_service), which this one does not need.
'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { Duplex } = require('node:stream');
const { parseArgs } = require('node:util');

const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

// The handshake: capgate's cookie and the protocol versions this script speaks.
const COOKIE_KEY = 'CAPGATE_PROVIDER';
const COOKIE_VALUE = 'capgate-provider-protocol';
const PROTOCOL_VERSIONS = [1];
const CORE_PROTOCOL_VERSION = 1; // go-plugin's own

function main() {
  if (process.env[COOKIE_KEY] !== COOKIE_VALUE) {
    process.stderr.write('provider.js is a capgate provider process: capgate starts it, it is not run by hand\n');
    process.exit(1);
  }
  const { values: opts, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      print: { type: 'boolean', default: false },
      overreach: { type: 'boolean', default: false },
      'ignore-deadline': { type: 'boolean', default: false },
      'ignore-shutdown': { type: 'boolean', default: false },
      proto: { type: 'string', default: path.join(__dirname, '..', '..', '..', 'proto', 'capgate', 'provider', 'v1', 'provider.proto') },
    },
  });
  if (positionals.length !== 1) {
    process.stderr.write('usage: provider.js [--print] [--overreach] [--ignore-deadline] [--ignore-shutdown] [--proto=PATH] MANIFEST\n');
    process.exit(2);
  }
  const manifest = fs.readFileSync(positionals[0]);
  const version = negotiate(process.env.PLUGIN_PROTOCOL_VERSIONS);

  const server = new grpc.Server();
  const provider = grpc.loadPackageDefinition(protoLoader.loadSync(opts.proto,
    { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true })).capgate.provider.v1;
  server.addService(provider.ProviderService.service, providerService(manifest, opts));
  const own = grpc.loadPackageDefinition(protoLoader.fromJSON(goPluginProtos, { keepCase: true, enums: String }));
  server.addService(own.grpc.health.v1.Health.service, {
    Check(call, cb) {
      if (call.request.service !== '' && call.request.service !== 'plugin') {
        return cb({ code: grpc.status.NOT_FOUND, details: 'no such service' });
      }
      cb(null, { status: 'SERVING' });
    },
  });
  server.addService(own.plugin.GRPCController.service, {
    Shutdown(_call, cb) {
      if (opts['ignore-shutdown']) {
        return;
      }
      cb(null, {});
      setImmediate(() => process.exit(0));
    },
  });
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());

  const multiplexEnv = process.env.PLUGIN_MULTIPLEX_GRPC || '';
  const multiplex = ['1', 't', 'T', 'true', 'TRUE', 'True'].includes(multiplexEnv); // Go's strconv.ParseBool
  const dir = process.env.PLUGIN_UNIX_SOCKET_DIR || os.tmpdir();
  const socket = path.join(dir, 'plugin' + crypto.randomBytes(6).toString('hex'));
  const listener = net.createServer((conn) => {
    if (!multiplex) {
      injector.injectConnection(conn);
      return;
    }
    listener.close(); // one host, one connection: everything else is a stream on it
    conn.on('close', () => process.exit(0));
    yamuxServe(conn, (stream) => injector.injectConnection(stream));
  });
  listener.listen(socket, () => {
    if (opts.print) {
      process.stdout.write('hello from the Node provider, before the handshake\n1|1|unix|/not/a/socket|netrpc\n');
    }
    let line = `${CORE_PROTOCOL_VERSION}|${version}|unix|${socket}|grpc|`;
    if (multiplexEnv !== '') {
      line += '|true';
    }
    process.stdout.write(line + '\n');
  });
}

// negotiate picks the highest version both the host (its comma list) and this script speak;
// with none in common, this script's highest, for the host to refuse and say why.
function negotiate(list) {
  const host = (list || '').split(',').map((s) => Number.parseInt(s, 10));
  const common = PROTOCOL_VERSIONS.filter((v) => host.includes(v));
  return Math.max(...(common.length > 0 ? common : PROTOCOL_VERSIONS));
}

// providerService is the ProviderService of the echo capability.
function providerService(manifest, opts) {
  const isEcho = (id) => typeof id === 'string' && id.endsWith('.echo');
  const paramsOf = (bytes) => {
    try {
      const v = JSON.parse(Buffer.from(bytes).toString('utf8'));
      return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : {};
    } catch {
      return {};
    }
  };
  const notFound = (id) => ({ code: 'not_found', reason: 'no capability ' + JSON.stringify(id) });
  return {
    GetManifest(_call, cb) {
      cb(null, { manifest });
    },
    ValidateParams(call, cb) {
      const { capability_id: id, params } = call.request;
      if (!isEcho(id)) {
        return cb(null, { error: notFound(id) });
      }
      if (paramsOf(params).text === 'forbidden') {
        return cb(null, { error: { code: 'invalid_params', reason: 'the params break a rule',
          problems: [{ path: 'text', rule: 'must not be the word forbidden' }] } });
      }
      cb(null, {});
    },
    Invoke(call) {
      const req = call.request;
      const terminal = (t) => {
        call.write({ terminal: t });
        call.end();
      };
      if (!isEcho(req.capability_id)) {
        return terminal({ error: notFound(req.capability_id) });
      }
      const params = paramsOf(req.params);
      call.write({ progress: { message: 'echoing', fraction: 0.5 } });
      const delay = Math.max(0, Number(params.delay_ms) || 0);
      const deadline = req.deadline_unix_ms > 0 ? req.deadline_unix_ms : Infinity;
      const late = !opts['ignore-deadline'] && Date.now() + delay > deadline;
      const timer = setTimeout(() => {
        if (late) {
          return terminal({ error: { code: 'timeout', reason: "the call's deadline passed", recoverable: true } });
        }
        terminal({
          result: { success: true, data: Buffer.from(JSON.stringify({ echo: params })) },
          observed_side_effects: [{ effect: opts.overreach ? 'write' : 'read', target: 'the params' }],
          evidence: [{ type: 'echo.v1', body: Buffer.from(JSON.stringify({ call: req.context ? req.context.call_id : '' })) }],
        });
      }, late ? Math.max(0, deadline - Date.now()) : delay);
      call.on('cancelled', () => clearTimeout(timer));
    },
    Undo(_call, cb) {
      cb(null, { error: { code: 'execution_failed', reason: 'the app undoes nothing' } });
    },
  };
}

// goPluginProtos are the services of go-plugin's own the host calls, as protobuf.js JSON:
// grpc.health.v1 (grpc/health/v1/health.proto) and go-plugin's internal/plugin
// grpc_controller.proto.
const goPluginProtos = {
  nested: {
    grpc: { nested: { health: { nested: { v1: { nested: {
      HealthCheckRequest: { fields: { service: { type: 'string', id: 1 } } },
      HealthCheckResponse: {
        fields: { status: { type: 'ServingStatus', id: 1 } },
        nested: { ServingStatus: { values: { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 } } },
      },
      Health: { methods: { Check: { requestType: 'HealthCheckRequest', responseType: 'HealthCheckResponse' } } },
    } } } } } },
    plugin: { nested: {
      Empty: { fields: {} },
      GRPCController: { methods: { Shutdown: { requestType: 'Empty', responseType: 'Empty' } } },
    } },
  },
};

// yamux (github.com/hashicorp/yamux spec.md), the server's side, as far as go-plugin's host
// uses it: streams the host opens, flow control both ways, pings answered, go away.
const YAMUX = {
  headerSize: 12,
  window: 256 * 1024, // every stream's initial window, in both directions
  data: 0, windowUpdate: 1, ping: 2, goAway: 3, // types
  syn: 1, ack: 2, fin: 4, rst: 8, // flags
  protocolError: 1, // go away code
};

// yamuxServe serves the host's yamux session on conn, handing each stream the host opens to
// onStream as a Duplex.
function yamuxServe(conn, onStream) {
  const streams = new Map();
  const send = (type, flags, id, length, body) => {
    if (conn.destroyed || conn.writableEnded) {
      return;
    }
    const h = Buffer.alloc(YAMUX.headerSize);
    h.writeUInt8(0, 0); // version
    h.writeUInt8(type, 1);
    h.writeUInt16BE(flags, 2);
    h.writeUInt32BE(id, 4);
    h.writeUInt32BE(length, 8);
    conn.write(body ? Buffer.concat([h, body]) : h);
  };
  const broken = () => {
    send(YAMUX.goAway, 0, 0, YAMUX.protocolError);
    conn.destroy();
  };
  conn.on('close', () => {
    for (const s of streams.values()) {
      s.destroy();
    }
  });
  conn.on('error', () => {}); // 'close' follows

  let buf = Buffer.alloc(0);
  conn.on('data', (chunk) => {
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
    while (buf.length >= YAMUX.headerSize) {
      const version = buf.readUInt8(0);
      const type = buf.readUInt8(1);
      const flags = buf.readUInt16BE(2);
      const id = buf.readUInt32BE(4);
      const length = buf.readUInt32BE(8);
      const bodyLength = type === YAMUX.data ? length : 0;
      if (version !== 0 || type > YAMUX.goAway) {
        return broken();
      }
      if (buf.length < YAMUX.headerSize + bodyLength) {
        return; // the rest of the frame is still on its way
      }
      const body = buf.subarray(YAMUX.headerSize, YAMUX.headerSize + bodyLength);
      buf = buf.subarray(YAMUX.headerSize + bodyLength);
      if (type === YAMUX.ping) {
        if (flags & YAMUX.syn) {
          send(YAMUX.ping, YAMUX.ack, 0, length);
        }
        continue;
      }
      if (type === YAMUX.goAway) {
        conn.end();
        return;
      }
      let s = streams.get(id);
      if (flags & YAMUX.syn) {
        if (s || id % 2 === 0) {
          return broken(); // a stream opened twice, or with a server's id
        }
        s = new YamuxStream(id, send, () => streams.delete(id));
        streams.set(id, s);
        send(YAMUX.windowUpdate, YAMUX.ack, id, 0);
        onStream(s);
      }
      if (!s) {
        continue; // a stream already reset: what is still on the wire for it is dropped
      }
      if (type === YAMUX.windowUpdate) {
        s.grow(length);
      } else if (!s.receive(body)) {
        return broken();
      }
      if (flags & YAMUX.rst) {
        s.reset();
      } else if (flags & YAMUX.fin) {
        s.remoteFin();
      }
    }
  });
}

// YamuxStream is one yamux stream as a Duplex: what it is sent is its readable side, what is
// written to it goes out in data frames within the host's window.
class YamuxStream extends Duplex {
  constructor(id, send, forget) {
    super();
    this.id = id;
    this.out = send;
    this.forget = forget;
    this.sendWindow = YAMUX.window;
    this.recvWindow = YAMUX.window;
    this.consumed = 0; // received and handed on, not yet granted back to the host
    this.pending = null; // a write waiting for window
    this.localClosed = false;
    this.remoteClosed = false;
  }

  // receive takes one data frame; false when the host sent more than its window allows.
  receive(body) {
    if (body.length === 0) {
      return true;
    }
    if (body.length > this.recvWindow || this.remoteClosed) {
      return false;
    }
    this.recvWindow -= body.length;
    this.consumed += body.length;
    if (this.push(Buffer.from(body))) {
      this.grant();
    }
    return true;
  }

  // grant gives the host back the window of what was handed on, half a window at a time
  // like hashicorp/yamux; a reader that pushes back holds it until it reads again.
  grant() {
    if (this.consumed >= YAMUX.window / 2 && !this.localClosed) {
      this.out(YAMUX.windowUpdate, 0, this.id, this.consumed);
      this.recvWindow += this.consumed;
      this.consumed = 0;
    }
  }

  grow(delta) {
    this.sendWindow += delta;
    this.flush();
  }

  remoteFin() {
    this.remoteClosed = true;
    this.push(null);
    if (this.localClosed) {
      this.forget();
    }
  }

  reset() {
    this.localClosed = this.remoteClosed = true;
    this.forget();
    this.destroy();
  }

  _read() {
    this.grant();
  }

  _write(chunk, _encoding, cb) {
    this.pending = { chunk, cb };
    this.flush();
  }

  flush() {
    while (this.pending && this.sendWindow > 0) {
      const { chunk, cb } = this.pending;
      const n = Math.min(chunk.length, this.sendWindow);
      this.out(YAMUX.data, 0, this.id, n, chunk.subarray(0, n));
      this.sendWindow -= n;
      if (n === chunk.length) {
        this.pending = null;
        cb();
      } else {
        this.pending.chunk = chunk.subarray(n);
      }
    }
  }

  _final(cb) {
    this.localClosed = true;
    this.out(YAMUX.windowUpdate, YAMUX.fin, this.id, 0);
    if (this.remoteClosed) {
      this.forget();
    }
    cb();
  }

  _destroy(err, cb) {
    if (!this.localClosed || !this.remoteClosed) {
      this.localClosed = this.remoteClosed = true;
      this.out(YAMUX.windowUpdate, YAMUX.rst, this.id, 0);
      this.forget();
    }
    this.pending = null;
    cb(err);
  }
}

main();
