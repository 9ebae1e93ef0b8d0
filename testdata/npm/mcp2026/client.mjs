// The official TypeScript SDK v2 client (@modelcontextprotocol/client, pinned in
// ../package.json) as an agent of capgate under MCP 2026-07-28: it connects pinned to that
// revision (server/discover, no initialize, no session), lists the tools, calls a low-risk
// read, requests a token, calls under it by handle, and makes a call and a token request that
// need the person: capgate answers them with an input request (a URL elicitation to its
// approval page), this client's handler answers "accept" (which approves nothing), and the
// SDK retries until the person has answered on the page (the Go test answers there).
//
// Usage: node client.mjs URL KEY. It prints one JSON object: what it saw.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [url, key] = process.argv.slice(2);
const seen = { requests: [], elicitations: [], steps: {} };

// Every HTTP exchange, as the wire has it: the request's MCP headers and the JSON-RPC method,
// and for tools/list the cache hints of the answer.
const recordingFetch = async (input, init) => {
  const headers = new Headers(init?.headers);
  let method = '';
  try {
    method = JSON.parse(init?.body ?? '{}').method ?? '';
  } catch {}
  const rec = {
    httpMethod: init?.method ?? 'GET',
    method,
    version: headers.get('mcp-protocol-version'),
    mcpMethod: headers.get('mcp-method'),
    mcpName: headers.get('mcp-name'),
    sessionId: headers.get('mcp-session-id'),
  };
  const res = await fetch(input, init);
  rec.status = res.status;
  rec.responseSessionId = res.headers.get('mcp-session-id');
  seen.requests.push(rec);
  if (method === 'tools/list') {
    const text = await res.clone().text();
    const m = text.match(/"cacheScope":"([a-z]+)"/);
    const t = text.match(/"ttlMs":(\d+)/);
    rec.cacheScope = m?.[1];
    rec.ttlMs = t ? Number(t[1]) : undefined;
  }
  return res;
};

const client = new Client(
  { name: 'ts-sdk-v2-agent', version: '1.0.0' },
  {
    versionNegotiation: { mode: { pin: '2026-07-28' } },
    capabilities: { elicitation: { url: {} } },
  },
);
client.setRequestHandler('elicitation/create', async (request) => {
  seen.elicitations.push(request.params);
  return { action: 'accept' };
});

const transport = new StreamableHTTPClientTransport(new URL(url + '/mcp'), {
  requestInit: { headers: { Authorization: 'Bearer ' + key } },
  fetch: recordingFetch,
});

const text = (res) => {
  const t = res?.content?.[0]?.text ?? '';
  try {
    return JSON.parse(t);
  } catch {
    return { raw: t };
  }
};

try {
  await client.connect(transport);
  seen.protocolVersion = client.getNegotiatedProtocolVersion();
  seen.era = client.getProtocolEra();
  seen.discover = client.getDiscoverResult();
  const list = await client.listTools();
  seen.tools = list.tools.map((t) => t.name);

  // A call that needs the person (this client requires a token for every call): an input
  // request, then the retry completes once the person approved on the page.
  const waited = await client.callTool({ name: 'calc__compute', arguments: { expression: '123 + 456 * 2' } });
  seen.steps.consentedCall = { isError: !!waited.isError, structured: waited.structuredContent, body: text(waited) };

  // A token for calc: low risk, issued at once; then a call naming it by handle.
  const req = await client.callTool({ name: 'capgate__request_capability', arguments: { capabilities: ['calc__compute'], duration: 600 } });
  const issued = text(req);
  seen.steps.request = { isError: !!req.isError, body: issued };
  const byHandle = await client.callTool({
    name: 'calc__compute',
    arguments: { expression: '6*7' },
    _meta: { 'capgate/token_handle': issued.token_handle },
  });
  seen.steps.byHandle = { isError: !!byHandle.isError, structured: byHandle.structuredContent, body: text(byHandle) };

  // A token that needs the person: an input request, then the retry waits for the page.
  const write = await client.callTool({ name: 'capgate__request_capability', arguments: { capabilities: ['fs.write'], duration: 600, reason: 'save the report' } });
  seen.steps.consentedToken = { isError: !!write.isError, body: text(write) };
  await client.close();
} catch (err) {
  seen.error = String(err?.stack ?? err);
}
process.stdout.write(JSON.stringify(seen) + '\n');
