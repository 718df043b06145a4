// The official OpenAI Node SDK's Responses API (responses.create and
// responses.stream) against a real kvmesh cluster serving tiny-qwen3
// (Qwen3's chat template and tool-call format): text answers, a function
// call forced by tool_choice and answered with function_call_output, a
// conversation continued by previous_response_id, and chat logprobs with n.
//
// Usage: node openai_responses_probe.mjs BASE_URL CI_DIR
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';

const [base, ciDir] = process.argv.slice(2);
const requireFromCi = createRequire(path.join(path.resolve(ciDir), 'package.json'));
const { OpenAI } = requireFromCi('openai');
const openai = new OpenAI({ apiKey: 'unused', baseURL: `${base}/v1`, maxRetries: 0, timeout: 120_000 });
const model = (await openai.models.list()).data[0].id;
const weather = {
  type: 'function', name: 'get_weather', description: 'The weather in a city.',
  parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Rome'] } },
                required: ['city'],
                additionalProperties: false },
};

const checks = [
  ['responses.create: text', async () => {
    const r = await openai.responses.create({ model, input: 'Say hello', instructions: 'Be brief.',
                                              max_output_tokens: 16, temperature: 0 });
    assert.equal(r.object, 'response');
    assert.ok(['completed', 'incomplete'].includes(r.status), r.status);
    assert.ok(r.output.some((item) => item.type === 'message'));
    assert.equal(typeof r.output_text, 'string');
    assert.ok(r.usage.input_tokens > 0);
  }],
  ['responses.stream: events and the final response', async () => {
    const stream = openai.responses.stream({ model, input: 'Say hello', max_output_tokens: 16,
                                             temperature: 0 });
    const types = [];
    let text = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
    }
    const final = await stream.finalResponse();
    assert.equal(types[0], 'response.created');
    assert.ok(['response.completed', 'response.incomplete'].includes(types.at(-1)), types.at(-1));
    // The SDK's final response (from the events) holds the streamed text.
    const message = final.output.find((item) => item.type === 'message');
    assert.equal(message.content[0].text, text);
  }],
  ['a forced function call, answered, then continued by previous_response_id', async () => {
    const first = await openai.responses.create({
      model, input: 'What is the weather in Paris?', tools: [weather],
      tool_choice: { type: 'function', name: 'get_weather' }, max_output_tokens: 200,
    });
    const call = first.output.find((item) => item.type === 'function_call');
    assert.ok(call, JSON.stringify(first.output));
    assert.equal(call.name, 'get_weather');
    assert.ok(['Paris', 'Rome'].includes(JSON.parse(call.arguments).city), call.arguments);
    // Stateless: the call and its output sent back as input items.
    const stream = openai.responses.stream({
      model, tools: [weather], max_output_tokens: 16,
      input: [{ role: 'user', content: 'What is the weather in Paris?' }, call,
              { type: 'function_call_output', call_id: call.call_id, output: '{"sky":"sunny"}' }],
    });
    for await (const event of stream) void event;
    const second = await stream.finalResponse();
    assert.ok(['completed', 'incomplete', 'in_progress'].includes(second.status), JSON.stringify(second));
    // Stateful: the same through the stored first response.
    const third = await openai.responses.create({
      model, previous_response_id: first.id, tools: [weather], max_output_tokens: 16,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: '{"sky":"sunny"}' }],
    });
    assert.equal(third.previous_response_id, first.id);
    assert.ok(third.usage.input_tokens > first.usage.input_tokens);
    const fetched = await openai.responses.retrieve(first.id);
    assert.equal(fetched.id, first.id);
  }],
  ['an unknown previous_response_id is a 404 in OpenAI\'s error shape', async () => {
    await assert.rejects(
      openai.responses.create({ model, input: 'x', previous_response_id: 'resp_missing' }),
      (e) => e.status === 404 && /resp_missing/.test(e.message));
  }],
  ['chat logprobs with n = 2, whole and streamed', async () => {
    const whole = await openai.chat.completions.create({
      model, messages: [{ role: 'user', content: 'Hi' }], n: 2, max_tokens: 8, logprobs: true,
      top_logprobs: 3, seed: 5 });
    assert.equal(whole.choices.length, 2);
    for (const c of whole.choices) {
      assert.ok(c.logprobs.content.length > 0);
      for (const t of c.logprobs.content) {
        assert.ok(t.logprob <= 0 && t.top_logprobs.length === 3);
        assert.ok(t.top_logprobs[0].logprob >= t.top_logprobs[2].logprob);
      }
    }
    const stream = await openai.chat.completions.create({
      model, messages: [{ role: 'user', content: 'Hi' }], n: 2, max_tokens: 8, logprobs: true,
      seed: 5, stream: true });
    const finished = new Set();
    let entries = 0;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        if (c.finish_reason) finished.add(c.index);
        entries += c.logprobs?.content?.length ?? 0;
      }
    }
    assert.deepEqual([...finished].sort(), [0, 1]);
    assert.ok(entries > 0);
  }],
];

let failed = 0;
for (const [name, check] of checks) {
  try {
    await check();
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e.stack ?? e}`);
  }
}
if (failed) process.exit(1);
console.log('PASS');
