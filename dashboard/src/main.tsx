// Entry point: the shell (served by svc at /, /dashboard and /share/<token>) has <div id="app">,
// with data-mode="share" on the share page.

import { render } from "preact";
import { App, tokenFromPath } from "./app";
import "./styles.css";

const root = document.getElementById("app");
if (root) {
  const share = root.dataset.mode === "share" ? (tokenFromPath(location.pathname) ?? "svc_share_") : null;
  root.textContent = "";
  render(<App shareToken={share} />, root);
}
