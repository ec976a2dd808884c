const http = require("http");
const settings = require("../config/settings.json");
const routes = require("./routes");

function withRetries(fn, retries) {
  return async (req, res) => {
    for (let attempt = 0; attempt <= retries; attempt++) {
      try {
        return await fn(req, res);
      } catch (err) {
        if (attempt === retries) throw err;
      }
    }
  };
}

const server = http.createServer(async (req, res) => {
  const handler = routes[req.url] || routes.notFound;
  await withRetries(handler, settings.retries)(req, res);
});

server.listen(process.env.PORT || 3000, () => {
  console.log("listening on", server.address().port);
});
