// ioredis against redcell: what protocol_test/clients_node_test.go runs.
//
// usage: node throttle.js PORT  -> one JSON object on stdout
"use strict";
const Redis = require("ioredis");

// The HTTP headers for a CL.THROTTLE reply, as the README maps them.
function rateLimitHeaders([limited, limit, remaining, retryAfter, resetAfter]) {
  const headers = {
    "X-RateLimit-Limit": String(limit),
    "X-RateLimit-Remaining": String(remaining),
    "X-RateLimit-Reset": String(resetAfter),
  };
  if (limited) headers["Retry-After"] = String(retryAfter);
  return headers;
}

async function main() {
  // ioredis checks INFO's loading:0 before its first command.
  const redis = new Redis({ host: "127.0.0.1", port: Number(process.argv[2]), lazyConnect: true });
  await redis.connect();
  const out = { ping: await redis.ping() };

  out.user123 = await redis.call("CL.THROTTLE", "user123", 15, 30, 60);
  out.steps = [];
  for (let i = 0; i < 3; i++) out.steps.push(await redis.call("CL.THROTTLE", "js", 1, 1, 60));
  out.headers = out.steps.map(rateLimitHeaders);
  out.peek = await redis.call("CL.THROTTLE", "js", 1, 1, 60, 0);

  // Pipelined, without MULTI (redcell has no transactions).
  const pipe = redis.pipeline();
  for (let i = 0; i < 3; i++) pipe.call("CL.THROTTLE", "pipe", 1, 1, 60);
  out.pipeline = (await pipe.exec()).map(([err, reply]) => (err ? String(err) : reply));

  try {
    await redis.call("CL.THROTTLE", "js", -1, 1, 60);
  } catch (e) {
    out.error = e.message;
  }

  out.pttl = await redis.pttl("js");
  out.deleted = await redis.del("js");
  out.after_delete = await redis.call("CL.THROTTLE", "js", 1, 1, 60);
  await redis.quit();
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
