// Shared helpers for the tinylab widgets: DOM/SVG element builders and number formatting.
// Takes nothing; gives `h`, `svg`, `showCode`, `formatCount`, `formatBytes`, `formatSeconds`, `plural`.
// Concatenated before the other widget sources by tinylab_widgets/assets.py (one ES module).

const SVG_NS = "http://www.w3.org/2000/svg";

function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  setAttributes(element, attributes);
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

// highlighted code: the HTML Pygments made on the Python side (widgets/highlight.py), or the plain
// text until that arrives (or where nothing can make it)
function showCode(element, html, text) {
  if (typeof html === "string") element.innerHTML = html;
  else element.textContent = text || "";
}

function svg(tag, attributes = {}, ...children) {
  const element = document.createElementNS(SVG_NS, tag);
  setAttributes(element, attributes);
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

function setAttributes(element, attributes) {
  for (const [key, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") element.setAttribute("class", value);
    else if (key === "dataset") Object.assign(element.dataset, value);
    else if (key.startsWith("on")) element.addEventListener(key.slice(2), value);
    else element.setAttribute(key, value === true ? "" : String(value));
  }
}

function formatCount(value) {
  if (value === null || value === undefined) return "–";
  const units = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "K"]];
  for (const [scale, unit] of units) {
    if (Math.abs(value) >= scale) return (value / scale).toFixed(value / scale < 10 ? 2 : 1) + unit;
  }
  return String(Math.round(value));
}

function formatBytes(value) {
  if (value === null || value === undefined) return "–";
  const units = ["B", "KB", "MB", "GB"];
  let index = 0;
  while (Math.abs(value) >= 1024 && index < units.length - 1) { value /= 1024; index += 1; }
  return (index === 0 ? String(Math.round(value)) : value.toFixed(1)) + " " + units[index];
}

function formatSeconds(value) {
  if (value === null || value === undefined) return "–";
  if (value >= 1) return value.toFixed(2) + " s";
  if (value >= 1e-3) return (value * 1e3).toFixed(2) + " ms";
  return (value * 1e6).toFixed(1) + " µs";
}

function formatRate(value) {
  return value === null || value === undefined ? "–" : value.toFixed(2);
}

function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}
