// The official OpenAI and Anthropic Node SDKs against a real kvmesh cluster
// (router + workers on stories260K), streaming and not. Greedy decoding, so
// streamed and whole answers must agree token for token.
//
// Usage: node cluster_sdk_probe.mjs BASE_URL CI_DIR
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';

const [base, ciDir] = process.argv.slice(2);
const requireFromCi = createRequire(path.join(path.resolve(ciDir), 'package.json'));
const { OpenAI } = requireFromCi('openai');
const { Anthropic } = requireFromCi('@anthropic-ai/sdk');
const common = { maxRetries: 0, timeout: 60_000 };
const openai = new OpenAI({ apiKey: 'unused', baseURL: `${base}/v1`, ...common });
const anthropic = new Anthropic({ apiKey: 'unused', baseURL: base, ...common });
const messages = [{ role: 'user', content: 'Tell me a story about a cat.' }];

const checks = [
  ['openai completions, whole and streamed', async () => {
    const { data, response } = await openai.completions
      .create({ model: 'llama', prompt: 'Once upon a time', max_tokens: 24, temperature: 0 })
      .withResponse();
    assert.ok(data.choices[0].text.startsWith(', there was a little girl named Lily.'), data.choices[0].text);
    assert.equal(data.usage.completion_tokens, 24);
    assert.ok(response.headers.get('x-kvmesh-worker'));
    const stream = await openai.completions.create({
      model: 'llama', prompt: 'Once upon a time', max_tokens: 24, temperature: 0, stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
    assert.equal(text, data.choices[0].text);
  }],
  ['openai chat, whole and streamed with usage', async () => {
    const whole = await openai.chat.completions.create({ model: 'llama', messages, max_tokens: 20, temperature: 0 });
    assert.equal(whole.object, 'chat.completion');
    assert.ok(whole.choices[0].message.content.length > 0);
    assert.ok('cached_tokens' in whole.usage.prompt_tokens_details);
    const stream = await openai.chat.completions.create({
      model: 'llama', messages, max_tokens: 20, temperature: 0, stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let usage = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, whole.choices[0].message.content);
    assert.equal(usage.completion_tokens, whole.usage.completion_tokens);
    // The second identical request hits the prefix cache on its worker.
    assert.ok(usage.prompt_tokens_details.cached_tokens >= 0);
  }],
  ['anthropic messages, whole and streamed', async () => {
    const whole = await anthropic.messages.create({ model: 'llama', max_tokens: 20, messages, temperature: 0 });
    assert.equal(whole.type, 'message');
    assert.equal(whole.role, 'assistant');
    assert.ok(whole.content[0].text.length > 0);
    assert.ok(['end_turn', 'max_tokens', 'stop_sequence'].includes(whole.stop_reason));
    const final = await anthropic.messages
      .stream({ model: 'llama', max_tokens: 20, messages, temperature: 0 })
      .finalMessage();
    assert.equal(final.content[0].text, whole.content[0].text);
    assert.equal(final.usage.output_tokens, whole.usage.output_tokens);
  }],
  ['openai models list', async () => {
    const list = await openai.models.list();
    assert.equal(list.data[0].id, 'llama');
  }],
];

let failed = 0;
for (const [name, fn] of checks) {
  try {
    await fn();
    console.log(`ok - ${name}`);
  } catch (e) {
    failed++;
    console.log(`not ok - ${name}: ${e.message}`);
  }
}
process.exit(failed ? 1 : 0);
