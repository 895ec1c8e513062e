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

  // Pipelined, without MULTI.
  const pipe = redis.pipeline();
  for (let i = 0; i < 3; i++) pipe.call("CL.THROTTLE", "pipe", 1, 1, 60);
  out.pipeline = (await pipe.exec()).map(([err, reply]) => (err ? String(err) : reply));

  // multi(): MULTI ... EXEC.
  const tx = redis.multi();
  for (let i = 0; i < 3; i++) tx.call("CL.THROTTLE", "tx", 1, 1, 60);
  out.transaction = (await tx.exec()).map(([err, reply]) => (err ? String(err) : reply));

  // A command refused while queued aborts the transaction: nothing runs.
  try {
    await redis.multi().call("CL.THROTTLE", "txabort", 1, 1, 60).call("CL.NOSUCH", "txabort").exec();
  } catch (e) {
    out.tx_abort = e.message;
  }
  out.tx_abort_peek = await redis.call("CL.THROTTLE", "txabort", 1, 1, 60, 0);

  // WATCH: another client's decision on the key makes EXEC run nothing
  // (ioredis resolves exec() to null).
  const other = new Redis({ host: "127.0.0.1", port: Number(process.argv[2]), lazyConnect: true });
  await other.connect();
  await redis.watch("watched");
  await other.call("CL.THROTTLE", "watched", 1, 1, 60);
  out.watch_conflict = (await redis.multi().call("CL.THROTTLE", "watched", 1, 1, 60).exec()) === null;
  out.watched_peek = await redis.call("CL.THROTTLE", "watched", 1, 1, 60, 0);
  await other.quit();

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
