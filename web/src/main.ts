import "./styles.css";

import { tokenControl } from "./auth";
import { h } from "./dom";
import { agentPage } from "./pages/agent";
import { comparePage } from "./pages/compare";
import { newRunPage } from "./pages/newRun";
import { runPage } from "./pages/run";
import { runsPage } from "./pages/runs";
import { addRoute, startRouter } from "./router";

addRoute("/", runsPage);
addRoute("/runs", runsPage);
addRoute("/runs/new", newRunPage);
addRoute("/runs/:id", runPage);
addRoute("/agents/:id", agentPage);
addRoute("/compare", comparePage);

document.getElementById("token-slot")?.append(tokenControl());

startRouter(document.getElementById("main") as HTMLElement, (main) => {
  document.title = "Not found · Clade";
  main.append(h("h1", null, "Page not found"), h("p", null, h("a", { href: "/" }, "Back to the runs")));
});
