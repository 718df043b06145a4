// Drives kvmesh's HTTP gateway with the official OpenAI and Anthropic Node
// SDKs (tools/ci/package.json pins them), streaming and not, and checks what
// the SDKs parse. The gateway runs over a fake core (gateway_test_server), so
// every answer is known: "Hello, world!" from worker "worker-a", and the
// "tools" model's tool call and answer (fake_inference_core.h).
//
// Usage: node sdk_probe.mjs GATEWAY_TEST_SERVER CI_DIR
// Prints one "ok"/"not ok" line per check; exits 1 when any check fails.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import readline from 'node:readline';

const [serverPath, ciDir] = process.argv.slice(2);
if (!serverPath || !ciDir) {
  console.error('usage: node sdk_probe.mjs GATEWAY_TEST_SERVER CI_DIR');
  process.exit(2);
}
// The SDKs live in tools/ci/node_modules, not beside this file.
const requireFromCi = createRequire(path.join(path.resolve(ciDir), 'package.json'));
const { OpenAI } = requireFromCi('openai');
const { Anthropic } = requireFromCi('@anthropic-ai/sdk');

const server = spawn(serverPath, [], { stdio: ['pipe', 'pipe', 'inherit'] });
const port = await new Promise((resolve, reject) => {
  const lines = readline.createInterface({ input: server.stdout });
  lines.once('line', (line) => {
    const match = /^PORT (\d+)$/.exec(line);
    if (match) resolve(Number(match[1]));
    else reject(new Error(`unexpected first line from the server: ${line}`));
  });
  server.once('exit', (code) => reject(new Error(`server exited early (code ${code})`)));
});

const base = `http://127.0.0.1:${port}`;
const common = { maxRetries: 0, timeout: 10_000 };
const openai = new OpenAI({ apiKey: 'test-key', baseURL: `${base}/v1`, ...common });
const anthropic = new Anthropic({ apiKey: 'test-key', baseURL: base, ...common });
const user = [{ role: 'user', content: 'hi there' }];  // 8 bytes: the fake caches 4

// A tool round trip as an agent makes it: offer a tool, get the call, send
// its result back, get the answer. The "tools" model answers as the router
// does once it has parsed a model's output.
const weather = {
  name: 'get_weather', description: 'Weather now',
  parameters: { type: 'object', properties: { query: { type: 'string' } } },
};
const ask = [{ role: 'user', content: 'Paris?' }];

const checks = [
  ['openai tool round trip', async () => {
    const tools = [{ type: 'function', function: weather }];
    const first = await openai.chat.completions.create({ model: 'tools', messages: ask, tools });
    const choice = first.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.content, null);
    assert.equal(choice.message.reasoning_content, 'Thinking.');
    assert.equal(choice.message.tool_calls.length, 1);
    const call = choice.message.tool_calls[0];
    assert.equal(call.function.name, 'get_weather');
    assert.deepEqual(JSON.parse(call.function.arguments), { query: 'Paris?' });
    const second = await openai.chat.completions.create({
      model: 'tools', tools,
      messages: [...ask, choice.message, { role: 'tool', tool_call_id: call.id, content: '18C' }],
    });
    assert.equal(second.choices[0].message.content, 'The tool said: 18C');
    assert.equal(second.choices[0].finish_reason, 'stop');
  }],
  ['openai tool round trip, streamed (runTools)', async () => {
    const runner = openai.chat.completions.runTools({
      model: 'tools', messages: ask, stream: true,
      tools: [{ type: 'function', function: { ...weather, function: ({ query }) => `18C in ${query}`,
                                               parse: JSON.parse } }],
    });
    const answer = await runner.finalContent();
    assert.equal(answer, 'The tool said: 18C in Paris?');
  }],
  ['anthropic tool round trip', async () => {
    const tools = [{ name: weather.name, description: weather.description,
                     input_schema: weather.parameters }];
    const first = await anthropic.messages.create({ model: 'tools', max_tokens: 64, messages: ask, tools });
    assert.equal(first.stop_reason, 'tool_use');
    assert.deepEqual(first.content.map((b) => b.type), ['thinking', 'tool_use']);
    assert.equal(first.content[0].thinking, 'Thinking.');
    const use = first.content[1];
    assert.equal(use.name, 'get_weather');
    assert.deepEqual(use.input, { query: 'Paris?' });
    const second = await anthropic.messages.create({
      model: 'tools', max_tokens: 64, tools,
      messages: [...ask, { role: 'assistant', content: first.content },
                 { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '18C' }] }],
    });
    assert.equal(second.stop_reason, 'end_turn');
    assert.equal(second.content.at(-1).text, 'The tool said: 18C');
  }],
  ['anthropic tool round trip, streamed', async () => {
    const tools = [{ name: weather.name, input_schema: weather.parameters }];
    const stream = anthropic.messages.stream({ model: 'tools', max_tokens: 64, messages: ask, tools });
    let thinking = '';
    stream.on('thinking', (delta) => { thinking += delta; });
    const first = await stream.finalMessage();
    assert.equal(thinking, 'Thinking.');
    assert.equal(first.stop_reason, 'tool_use');
    const use = first.content.find((b) => b.type === 'tool_use');
    assert.deepEqual(use.input, { query: 'Paris?' });  // assembled from input_json_delta
    const second = await anthropic.messages.stream({
      model: 'tools', max_tokens: 64, tools,
      messages: [...ask, { role: 'assistant', content: first.content },
                 { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id,
                                             content: [{ type: 'text', text: '18C' }] }] }],
    }).finalMessage();
    assert.equal(second.content.at(-1).text, 'The tool said: 18C');
  }],
  ['openai chat.completions.create', async () => {
    const { data, response } = await openai.chat.completions
      .create({ model: 'tiny', messages: user, max_tokens: 16 })
      .withResponse();
    assert.equal(data.object, 'chat.completion');
    assert.equal(data.choices[0].message.content, 'Hello, world!');
    assert.equal(data.choices[0].finish_reason, 'stop');
    assert.equal(data.usage.prompt_tokens, 8);
    assert.equal(data.usage.prompt_tokens_details.cached_tokens, 4);
    assert.equal(response.headers.get('x-kvmesh-worker'), 'worker-a');
  }],
  ['openai chat.completions stream with usage', async () => {
    const stream = await openai.chat.completions.create({
      model: 'tiny', messages: user, stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let finish = null;
    let usage = null;
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        text += choice.delta.content ?? '';
        finish = choice.finish_reason ?? finish;
      }
      usage = chunk.usage ?? usage;
    }
    assert.equal(text, 'Hello, world!');
    assert.equal(finish, 'stop');
    assert.equal(usage.completion_tokens, 4);
    assert.equal(usage.prompt_tokens_details.cached_tokens, 4);
  }],
  ['openai completions.create', async () => {
    const data = await openai.completions.create({ model: 'tiny', prompt: 'Once upon', max_tokens: 2 });
    assert.equal(data.choices[0].text, 'Hello,');
    assert.equal(data.choices[0].finish_reason, 'length');
    assert.equal(data.usage.total_tokens, 11);
  }],
  ['openai completions stream', async () => {
    const stream = await openai.completions.create({ model: 'tiny', prompt: 'x', stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0].text;
    assert.equal(text, 'Hello, world!');
  }],
  ['openai models.list', async () => {
    const ids = [];
    for await (const model of openai.models.list()) ids.push(model.id);
    assert.deepEqual(ids, ['tiny', 'slow']);
  }],
  ['openai wrong key is AuthenticationError', async () => {
    const bad = new OpenAI({ apiKey: 'wrong', baseURL: `${base}/v1`, ...common });
    await assert.rejects(bad.chat.completions.create({ model: 'tiny', messages: user }),
      (error) => error instanceof OpenAI.AuthenticationError && error.status === 401);
  }],
  ['openai unknown model is NotFoundError', async () => {
    await assert.rejects(openai.chat.completions.create({ model: 'nope', messages: user }),
      (error) => error instanceof OpenAI.NotFoundError && /unknown model/.test(error.message));
  }],
  ['openai overload is RateLimitError with retry-after', async () => {
    await assert.rejects(openai.chat.completions.create({ model: 'overloaded', messages: user }),
      (error) => error instanceof OpenAI.RateLimitError && error.headers.get('retry-after') === '1');
  }],
  ['openai error inside a stream is raised', async () => {
    const stream = await openai.chat.completions.create({ model: 'broken', messages: user, stream: true });
    await assert.rejects((async () => { for await (const _ of stream) { /* drain */ } })(),
      (error) => error instanceof OpenAI.APIError && /middle of the answer/.test(error.message));
  }],
  ['anthropic messages.create', async () => {
    const message = await anthropic.messages.create({
      model: 'tiny', max_tokens: 64, system: 'Be brief.', messages: user,
    });
    assert.equal(message.type, 'message');
    assert.equal(message.content[0].text, 'Hello, world!');
    assert.equal(message.stop_reason, 'end_turn');
    assert.equal(message.usage.input_tokens, 9);  // 17 bytes, 8 cached
    assert.equal(message.usage.cache_read_input_tokens, 8);
    assert.equal(message.usage.output_tokens, 4);
  }],
  ['anthropic messages.stream().finalMessage()', async () => {
    const stream = anthropic.messages.stream({ model: 'tiny', max_tokens: 64, messages: user });
    let text = '';
    stream.on('text', (delta) => { text += delta; });
    const message = await stream.finalMessage();
    assert.equal(text, 'Hello, world!');
    assert.equal(message.content[0].text, 'Hello, world!');
    assert.equal(message.stop_reason, 'end_turn');
    assert.equal(message.usage.input_tokens, 4);
    assert.equal(message.usage.cache_read_input_tokens, 4);
  }],
  ['anthropic raw stream event order', async () => {
    const stream = await anthropic.messages.create({
      model: 'tiny', max_tokens: 2, messages: user, stream: true,
    });
    const types = [];
    for await (const event of stream) types.push(event.type);
    assert.deepEqual(types, ['message_start', 'content_block_start', 'content_block_delta',
      'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
  }],
  ['anthropic bearer token (1.x SDK style)', async () => {
    const bearer = new Anthropic({ apiKey: null, authToken: 'test-key', baseURL: base, ...common });
    const message = await bearer.messages.create({ model: 'tiny', max_tokens: 2, messages: user });
    assert.equal(message.content[0].text, 'Hello,');
    assert.equal(message.stop_reason, 'max_tokens');
  }],
  ['anthropic wrong key is AuthenticationError', async () => {
    const bad = new Anthropic({ apiKey: 'wrong', baseURL: base, ...common });
    await assert.rejects(bad.messages.create({ model: 'tiny', max_tokens: 8, messages: user }),
      (error) => error instanceof Anthropic.AuthenticationError && error.status === 401);
  }],
  ['anthropic missing max_tokens is BadRequestError', async () => {
    const response = await fetch(`${base}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'test-key', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', messages: user }),
    });
    assert.equal(response.status, 400);
    assert.deepEqual(await response.json(), {
      type: 'error',
      error: { type: 'invalid_request_error', message: 'field "max_tokens" is required' },
    });
  }],
  ['anthropic error inside a stream is raised', async () => {
    const stream = anthropic.messages.stream({ model: 'broken', max_tokens: 8, messages: user });
    await assert.rejects(stream.finalMessage(), /middle of the answer/);
  }],
];

let failures = 0;
for (const [name, check] of checks) {
  try {
    await check();
    console.log(`ok - ${name}`);
  } catch (error) {
    failures += 1;
    console.log(`not ok - ${name}: ${error?.stack ?? error}`);
  }
}
server.stdin.end();
await new Promise((resolve) => server.once('exit', resolve));
console.log(failures === 0 ? `all ${checks.length} SDK checks passed`
                           : `${failures} of ${checks.length} SDK checks failed`);
process.exit(failures === 0 ? 0 : 1);
