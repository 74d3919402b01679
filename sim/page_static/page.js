// The demo page's only script: polls for changes, sends presses and commands to the page's own server
// (which signs them for the bot: no secret is ever here). It never builds markup from text: the server
// sends the channel's HTML already escaped, and everything this script shows goes in as text.
"use strict";
(function () {
  const body = document.body;
  const channel = body.dataset.channel;
  let version = body.dataset.version;
  const messages = document.getElementById("messages");
  const errorBox = document.getElementById("error");
  const modalRoot = document.getElementById("modal-root");
  body.dataset.script = "running";  // the tests read it in the DOM: the script loaded, the CSP let it run

  function showError(text) {
    errorBox.textContent = text;
    errorBox.hidden = !text;
  }

  function openThreads() {
    return Array.from(messages.querySelectorAll("details.thread[open]")).map((d) => d.dataset.thread);
  }

  async function poll() {
    if (!channel || body.classList.contains("mode-focus")) return;
    const query = new URLSearchParams({ channel: channel, v: version, open: openThreads().join(",") });
    try {
      const answer = await fetch("/page/state?" + query.toString(), { cache: "no-store" });
      const state = await answer.json();
      if (!state.ok) { showError(state.error || "the page could not be updated"); return; }
      if (state.html !== undefined) {
        showModal(state.modal);
        const atBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
        messages.innerHTML = state.html;  // server-rendered, every outside text escaped there
        if (atBottom) window.scrollTo(0, document.body.scrollHeight);
      }
      version = String(state.version);
      if (errorBox.dataset.kind === "poll") { showError(""); errorBox.dataset.kind = ""; }
    } catch (err) {
      showError("the demo is not answering (it may have ended)");
      errorBox.dataset.kind = "poll";
    }
  }

  // A modal the bot opened for this page's person: redrawn only when it changed (an answer, errors), so
  // what is being typed stays; server-rendered like the messages.
  function showModal(modal) {
    const key = modal ? modal.key : "";
    if (modalRoot.dataset.key === key) return;
    modalRoot.innerHTML = modal ? modal.html : "";
    modalRoot.dataset.key = key;
  }

  function typedValues(form) {
    const values = {};
    form.querySelectorAll("[data-block]").forEach((field) => {
      const control = field.querySelector("select, input, textarea");
      if (control) values[field.dataset.block] = control.value;
    });
    return values;
  }

  modalRoot.addEventListener("submit", (event) => {
    event.preventDefault();
    const form = event.target.closest("form.modal");
    if (form) send("/page/view/submit", { view_id: form.dataset.view, values: typedValues(form) });
  });
  modalRoot.addEventListener("click", (event) => {
    const close = event.target.closest("[data-modal=close]");
    const form = event.target.closest("form.modal");
    if (close && form) send("/page/view/close", { view_id: form.dataset.view });
  });

  async function send(path, payload) {
    try {
      const answer = await fetch(path, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(payload),
      });
      const result = await answer.json();
      showError(result.ok ? "" : (result.error || "refused"));
    } catch (err) {
      showError("could not reach the demo: " + err);
    }
    poll();
  }

  function press(control, option) {
    const about = JSON.parse(control.dataset.action);
    const msg = control.closest(".msg");
    send("/page/action", {
      channel: channel,
      ts: msg.dataset.ts,
      block_id: about.block_id || "",
      action_id: about.action_id,
      option: option,
    });
  }

  messages.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-action]");
    if (button) press(button, null);
  });
  messages.addEventListener("change", (event) => {
    const menu = event.target.closest("select[data-action]");
    if (!menu) return;
    const chosen = menu.options[menu.selectedIndex];
    if (chosen.dataset.url) window.open(chosen.dataset.url, "_blank", "noopener");
    else press(menu, chosen.value);
    menu.selectedIndex = 0;
  });
  const composer = document.getElementById("composer");
  composer.addEventListener("submit", (event) => {
    event.preventDefault();
    const input = document.getElementById("command");
    const text = input.value.trim().replace(/^\/proxy\s*/, "");
    if (!text) return;
    input.value = "";
    send("/page/command", { channel: channel, text: text });
  });
  setInterval(poll, 1000);
})();
