module.exports = {
  "/": (req, res) => {
    res.end("shop is open\n");
  },
  "/items": (req, res) => {
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify([{ id: 1, name: "tea" }]));
  },
  notFound: (req, res) => {
    res.statusCode = 404;
    res.end("not found\n");
  },
};
