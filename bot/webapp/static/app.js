// The Mini App: reads Telegram's initData from the URL fragment, calls the JSON API with
// it, and renders every view with DOM nodes (user text is never parsed as HTML).

const TEXTS = {
  en: {
    timeline: "Timeline", facts: "Facts", people: "People", answers: "Answers", more: "Forget & export",
    search: "Search memory", find: "Find", from: "From", to: "To", messages: "messages",
    documents: "Documents", learnt: "Facts learnt here", back: "← Back", edit: "Edit", save: "Save",
    cancel: "Cancel", delete: "Delete", sure: "Tap again to delete", core: "core", source: "Source topic",
    rename: "Rename", merge: "Merge into…", aliases: "Also", circle: "Circle", mentioned: "Topics",
    nothing: "Nothing here yet.", sources: "Sources", forgotten: "forgotten since",
    forgetTopic: "Forget topic", forgetAll: "Forget everything", forgetAllSure: "Tap again: forget ALL memory",
    exportJson: "Download export (JSON)", done: "Done.", unauthorized: "Open this page from the bot in Telegram.",
    error: "Something went wrong", identity: "Identity", context: "Context", status: "Status",
    you: "You", bot: "Topica", topic: "Topic", fact: "Fact", person: "Person",
    tasks: "Tasks", pause: "Pause", resume: "Resume", cancelTask: "Cancel task",
    sureCancel: "Tap again to cancel", next: "Next run", repeats: "repeats",
    state_active: "active", state_paused: "paused", state_done: "done", state_cancelled: "cancelled",
  },
  ru: {
    timeline: "Хронология", facts: "Факты", people: "Люди", answers: "Ответы", more: "Забыть и выгрузить",
    search: "Поиск по памяти", find: "Найти", from: "С", to: "По", messages: "сообщ.",
    documents: "Документы", learnt: "Факты из этой темы", back: "← Назад", edit: "Изменить", save: "Сохранить",
    cancel: "Отмена", delete: "Удалить", sure: "Нажмите ещё раз, чтобы удалить", core: "главное",
    source: "Тема-источник", rename: "Переименовать", merge: "Объединить с…", aliases: "Также",
    circle: "Круг", mentioned: "Темы", nothing: "Пока пусто.", sources: "Источники",
    forgotten: "забыто с тех пор", forgetTopic: "Забыть тему", forgetAll: "Забыть всё",
    forgetAllSure: "Нажмите ещё раз: забыть ВСЮ память", exportJson: "Скачать выгрузку (JSON)",
    done: "Готово.", unauthorized: "Откройте эту страницу из бота в Telegram.", error: "Что-то пошло не так",
    identity: "О вас", context: "Контекст", status: "Состояние", you: "Вы", bot: "Topica",
    topic: "Тема", fact: "Факт", person: "Человек",
    tasks: "Задачи", pause: "Пауза", resume: "Возобновить", cancelTask: "Отменить задачу",
    sureCancel: "Нажмите ещё раз, чтобы отменить", next: "Следующий запуск", repeats: "повтор",
    state_active: "активна", state_paused: "на паузе", state_done: "выполнена", state_cancelled: "отменена",
  },
};

const fragment = new URLSearchParams(location.hash.slice(1));
const initData = fragment.get("tgWebAppData") || sessionStorage.getItem("tgWebAppData") || "";
if (initData) sessionStorage.setItem("tgWebAppData", initData);
const theme = JSON.parse(fragment.get("tgWebAppThemeParams") || sessionStorage.getItem("theme") || "{}");
sessionStorage.setItem("theme", JSON.stringify(theme));
for (const [key, value] of Object.entries(theme)) {
  if (/^#[0-9a-fA-F]{3,8}$/.test(value)) {
    document.documentElement.style.setProperty(`--tg-${key.replaceAll("_", "-")}`, value);
  }
}
let T = TEXTS.en;
const view = document.getElementById("view");

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "on") for (const [event, fn] of Object.entries(value)) node.addEventListener(event, fn);
    else if (key === "class") node.className = value;
    else node[key] = value;
  }
  for (const child of children.flat(Infinity)) if (child != null) node.append(child);
  return node;
}

async function api(method, path, body) {
  const response = await fetch(`api${path}`, {
    method, headers: { Authorization: `tma ${initData}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 401) throw new Error(T.unauthorized);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error || T.error);
  return data;
}

function show(...nodes) {
  view.replaceChildren(...nodes.flat(Infinity));
  window.scrollTo(0, 0);
}

async function guarded(render) {
  try { await render(); } catch (error) { show(el("p", { class: "error", textContent: error.message })); }
}

function day(iso) { return (iso || "").slice(0, 10); }

function confirmButton(label, sure, action) {
  let armed = false;
  const button = el("button", { class: "danger", textContent: label });
  button.addEventListener("click", async () => {
    if (!armed) { armed = true; button.textContent = sure; return; }
    await guarded(action);
  });
  return button;
}

async function timeline(query = {}) {
  const params = new URLSearchParams(query);
  const topics = await api("GET", `/topics?${params}`);
  const q = el("input", { type: "search", name: "q", placeholder: T.search, value: query.q || "" });
  const since = el("input", { type: "date", name: "since", value: query.since || "", title: T.from });
  const until = el("input", { type: "date", name: "until", value: query.until || "", title: T.to });
  const form = el("form", { class: "search", on: { submit: (event) => {
    event.preventDefault();
    guarded(() => timeline({ q: q.value, since: since.value, until: until.value }));
  } } }, q, since, until, el("button", { class: "primary", type: "submit", textContent: T.find }));
  show(form, topics.length ? topics.map((topic) => el("div", { class: "card topic" },
    el("p", {}, el("a", { href: "#", textContent: topic.summary,
      on: { click: (event) => { event.preventDefault(); guarded(() => topicPage(topic.id)); } } })),
    el("p", { class: "muted", textContent:
      `${day(topic.first_message_at)} – ${day(topic.last_message_at)} · ${topic.message_count} ${T.messages}` }),
    topic.conversations.length ? el("p", { class: "muted", textContent: `↳ ${topic.conversations.join("; ")}` }) : null,
  )) : el("p", { class: "muted", textContent: T.nothing }));
}

async function topicPage(id) {
  const topic = await api("GET", `/topics/${id}`);
  show(
    el("button", { textContent: T.back, on: { click: () => guarded(timeline) } }),
    el("h2", { textContent: topic.summary }),
    el("p", { class: "muted", textContent: `${day(topic.first_message_at)} – ${day(topic.last_message_at)}` }),
    topic.messages.map((m) => el("div", { class: `message ${m.role}` },
      el("p", { class: "muted", textContent: `${m.role === "user" ? m.author || T.you : T.bot} · ${m.created_at.slice(0, 16).replace("T", " ")}` }),
      el("p", { textContent: m.content }))),
    topic.documents.length ? [el("h3", { textContent: T.documents }),
      topic.documents.map((d) => el("p", { textContent: `${d.name} (${d.chars})` }))] : [],
    topic.facts.length ? [el("h3", { textContent: T.learnt }), topic.facts.map(factCard)] : [],
    el("div", { class: "row" }, confirmButton(T.forgetTopic, T.sure, async () => {
      await api("DELETE", `/topics/${id}`); await timeline();
    })),
  );
}

function factCard(fact) {
  const card = el("div", { class: "card fact" });
  const render = () => card.replaceChildren(
    el("p", {}, fact.content, fact.core ? el("span", { class: "badge", textContent: T.core }) : null),
    el("div", { class: "row" },
      el("button", { textContent: T.edit, on: { click: editing } }),
      fact.topic_id ? el("button", { textContent: T.source,
        on: { click: () => guarded(() => topicPage(fact.topic_id)) } }) : null,
      confirmButton(T.delete, T.sure, async () => { await api("DELETE", `/facts/${fact.id}`); card.remove(); })),
  );
  function editing() {
    const text = el("textarea", { rows: 3, value: fact.content });
    card.replaceChildren(text, el("div", { class: "row" },
      el("button", { class: "primary", textContent: T.save, on: { click: () => guarded(async () => {
        Object.assign(fact, await api("PATCH", `/facts/${fact.id}`, { content: text.value }));
        render();
      }) } }),
      el("button", { textContent: T.cancel, on: { click: render } })));
    text.focus();
  }
  render();
  return card;
}

async function facts() {
  const groups = await api("GET", "/facts");
  const types = Object.keys(groups);
  show(types.length ? types.map((type) => [el("h3", { textContent: T[type] || type }), groups[type].map(factCard)])
    : el("p", { class: "muted", textContent: T.nothing }));
}

async function people() {
  const everyone = await api("GET", "/people");
  show(everyone.length ? everyone.map((person) => personCard(person, everyone))
    : el("p", { class: "muted", textContent: T.nothing }));
}

function personCard(person, everyone) {
  const name = el("input", { type: "text", value: person.name });
  const into = el("select", {}, el("option", { value: "", textContent: T.merge }),
    everyone.filter((p) => p.id !== person.id).map((p) => el("option", { value: p.id, textContent: p.name })));
  into.addEventListener("change", () => into.value && guarded(async () => {
    await api("POST", `/people/${person.id}/merge`, { into: Number(into.value) }); await people();
  }));
  return el("div", { class: "card person" },
    el("p", {}, el("b", { textContent: person.name }),
      person.circle ? el("span", { class: "badge", textContent: person.circle }) : null),
    person.aliases.length ? el("p", { class: "muted", textContent: `${T.aliases}: ${person.aliases.join(", ")}` }) : null,
    person.bio ? el("p", { textContent: person.bio }) : null,
    person.topics.length ? el("p", { class: "muted", textContent: `${T.mentioned}: ${person.topics.map((t) => t.summary).join("; ")}` }) : null,
    el("div", { class: "row" }, name,
      el("button", { textContent: T.rename, on: { click: () => guarded(async () => {
        await api("PATCH", `/people/${person.id}`, { name: name.value }); await people();
      }) } }),
      into,
      confirmButton(T.delete, T.sure, async () => { await api("DELETE", `/people/${person.id}`); await people(); })),
  );
}

async function answers() {
  const recent = await api("GET", "/answers");
  show(recent.length ? recent.map((answer) => {
    const s = answer.sources;
    const lines = [...s.topics.map((t) => `${T.topic}: ${t.summary}`),
      ...s.facts.map((f) => `${T.fact}: ${f.content}`), ...s.people.map((p) => `${T.person}: ${p.name}`)];
    return el("div", { class: "card answer" },
      el("p", { class: "muted", textContent: answer.created_at.slice(0, 16).replace("T", " ") }),
      el("p", { textContent: answer.content }),
      el("h3", { textContent: T.sources }), lines.map((line) => el("p", { textContent: line })),
      s.forgotten ? el("p", { class: "muted", textContent: `${s.forgotten} ${T.forgotten}` }) : null);
  }) : el("p", { class: "muted", textContent: T.nothing }));
}

async function tasks() {
  const all = await api("GET", "/tasks");
  show(all.length ? all.map(taskCard) : el("p", { class: "muted", textContent: T.nothing }));
}

function taskCard(task) {
  const card = el("div", { class: "card task" });
  const act = (action) => guarded(async () => {
    Object.assign(task, await api("POST", `/tasks/${task.id}/${action}`)); render();
  });
  const render = () => {
    const open = task.state === "active" || task.state === "paused";
    card.classList.toggle("closed", !open);
    card.replaceChildren(
      el("p", {}, task.request, el("span", { class: `badge state-${task.state}`, textContent: T[`state_${task.state}`] })),
      el("p", { class: "muted", textContent: [open && task.next_run_local ? `${T.next}: ${task.next_run_local}` : null,
        task.recurring ? `${T.repeats}: ${task.rule}` : null].filter(Boolean).join(" · ") }),
      ...(open ? [el("div", { class: "row" },
        task.state === "active" ? el("button", { textContent: T.pause, on: { click: () => act("pause") } })
          : el("button", { textContent: T.resume, on: { click: () => act("resume") } }),
        confirmButton(T.cancelTask, T.sureCancel, () => act("cancel")))] : []),
    );
  };
  render();
  return card;
}

async function more() {
  const status = el("p", { class: "muted" });
  show(
    el("div", { class: "card" }, el("button", { class: "primary", textContent: T.exportJson, on: { click: () => guarded(async () => {
      const data = await api("GET", "/export");
      const link = el("a", { href: URL.createObjectURL(new Blob([JSON.stringify(data, null, 2)],
        { type: "application/json" })), download: "topica-export.json" });
      link.click();
    }) } })),
    el("div", { class: "card" }, confirmButton(T.forgetAll, T.forgetAllSure, async () => {
      await api("POST", "/forget-all", { confirm: true }); status.textContent = T.done;
    })),
    status,
  );
}

const TABS = { timeline, facts, people, answers, tasks, more };

async function start() {
  try { T = TEXTS[(await api("GET", "/me")).language] || TEXTS.en; } catch (error) {
    show(el("p", { class: "error", textContent: error.message })); return;
  }
  document.documentElement.lang = T === TEXTS.ru ? "ru" : "en";
  const tabs = document.getElementById("tabs");
  const hasTasks = (await api("GET", "/tasks").catch(() => [])).length > 0;
  const shown = Object.entries(TABS).filter(([name]) => name !== "tasks" || hasTasks);
  const buttons = shown.map(([name, render]) => el("button", { textContent: T[name],
    id: `tab-${name}`, on: { click: () => {
      for (const other of buttons) other.classList.toggle("active", other.id === `tab-${name}`);
      guarded(render);
    } } }));
  tabs.replaceChildren(...buttons);
  buttons[0].click();
}

start();
