// Node runner of apply_bench.mjs (Benchmarks/js/bench_client.py starts it):
//   node --expose-gc Benchmarks/js/apply_node.mjs CLIENT_MODULE < {"schema": …, "options": …}
// prints one JSON object on stdout.
import { pathToFileURL } from "node:url";
import { runApplyBench } from "./apply_bench.mjs";

const modulePath = process.argv[2];
if (!modulePath) { console.error("usage: apply_node.mjs PATH/TO/jetstream.mjs < input.json"); process.exit(64); }
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { schema, options } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const jetstream = await import(pathToFileURL(modulePath).href);
const report = await runApplyBench(jetstream, schema, options);
process.stdout.write(JSON.stringify({ ...report, node: process.version }) + "\n");
