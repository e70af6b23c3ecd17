// Loaded as a file, not inline: the Content-Security-Policy allows scripts of this origin only.
// A run page's lineage is its slowest request: start it now, while the app's code loads
// (src/pages/run.ts takes it over, or asks again if it failed).
(function () {
  var match = /^\/runs\/([0-9a-f]+)\/?$/.exec(location.pathname);
  if (!match || !window.fetch) return;
  var token = null;
  try {
    token = localStorage.getItem("clade.token");
  } catch {
    // Storage refused (a private window): the request goes without a token.
  }
  window.cladePrefetch = {
    path: "/api/runs/" + match[1] + "/lineage/live",
    response: fetch("/api/runs/" + match[1] + "/lineage/live", {
      headers: token ? { Authorization: "Bearer " + token } : {},
    }),
  };
})();
