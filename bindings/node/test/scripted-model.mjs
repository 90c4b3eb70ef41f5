// A scripted OpenAI-compatible model server on 127.0.0.1 for the end-to-end plugin tests: every
// chat completion that offers tools answers with the same tool call (same name, same arguments,
// a fresh call id) until `calls` calls were made in the conversation, then with the text "done".
// A request offering no tools (a title or summary request) gets a short text. Streaming (SSE)
// and plain JSON answers, as the client asks. Every request body is kept for the assertions.
import http from 'node:http';

/**
 * @param {{ tool: string, args: object, calls: number }} script
 * @returns {Promise<{ baseUrl: string, requests: object[], close: () => Promise<void> }>}
 */
export async function startScriptedModel({ tool, args, calls }) {
  const requests = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.method === 'GET' && req.url.endsWith('/models')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'scripted', object: 'model', owned_by: 'loopguard' }] }));
        return;
      }
      if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `scripted model: no route ${req.method} ${req.url}` } }));
        return;
      }
      let request;
      try {
        request = JSON.parse(body);
      } catch (e) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `scripted model: bad JSON: ${e.message}` } }));
        return;
      }
      requests.push(request);
      const messages = request.messages ?? [];
      const made = messages.filter((m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0).length;
      const offersTools = (request.tools?.length ?? 0) > 0;
      const call =
        offersTools && made < calls
          ? { id: `call_${made + 1}`, type: 'function', function: { name: tool, arguments: JSON.stringify(args) } }
          : null;
      const text = call ? null : offersTools ? 'done' : 'scripted';
      answer(res, request, call, text);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

function answer(res, request, call, text) {
  const base = { id: 'chatcmpl-scripted', created: Math.floor(Date.now() / 1000), model: request.model ?? 'scripted' };
  const finish = call ? 'tool_calls' : 'stop';
  if (!request.stream) {
    const message = call ? { role: 'assistant', content: null, tool_calls: [call] } : { role: 'assistant', content: text };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: finish }], usage }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const chunk = (choices, extra = {}) =>
    res.write(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices, ...extra })}\n\n`);
  const delta = call
    ? { role: 'assistant', content: null, tool_calls: [{ index: 0, ...call }] }
    : { role: 'assistant', content: text };
  chunk([{ index: 0, delta, finish_reason: null }]);
  chunk([{ index: 0, delta: {}, finish_reason: finish }]);
  chunk([], { usage });
  res.end('data: [DONE]\n\n');
}

/** The text of a chat message's content (a string or an array of parts). */
export function textOf(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === 'string' ? p : (p?.text ?? ''))).join('\n');
  return '';
}

/** The tool results the model saw in the last request, in order (role "tool" messages). */
export function toolResultsSeen(requests) {
  const last = [...requests].reverse().find((r) => (r.tools?.length ?? 0) > 0);
  return (last?.messages ?? []).filter((m) => m.role === 'tool').map((m) => textOf(m.content));
}
