// Syntax highlighting for kernel source (C, OpenCL, CUDA, Python) and loop IR, in the browser.
// Takes source text and a language; gives a DocumentFragment of <span class="tl-tok-*"> tokens.
// Used by the kernel details panel (kernels_panel.js). Text goes in as text nodes, never HTML.

const KEYWORDS = {
  c: ["for", "if", "else", "while", "return", "void", "float", "double", "int", "unsigned",
      "long", "char", "short", "bool", "half", "const", "restrict", "typedef", "struct",
      "static", "inline", "__attribute__", "vector_size", "aligned", "__kernel", "__global",
      "__local", "__constant", "__restrict__", "extern", "__global__", "__device__",
      "__shared__", "__syncthreads", "barrier", "size_t", "uint", "uchar", "ushort", "ulong"],
  python: ["def", "return", "for", "in", "if", "else", "elif", "import", "from", "as", "while",
           "with", "lambda", "and", "or", "not", "None", "True", "False", "pass", "range"],
  ir: ["kernel", "for", "tile", "acc", "in", "global", "reduce", "upcast", "unroll", "vector",
       "thread", "local", "group"],
};

// one group per token kind, in the order tokenSpan reads them: comment, directive (or Python
// decorator), string, number, called name; any other name matches the last group
function tokenPattern(comment, directive, string, number) {
  const groups = [comment, directive, string, number].map((pattern) => `(${pattern})`);
  groups.push(String.raw`([A-Za-z_]\w*)(?=\s*\()`, String.raw`([A-Za-z_]\w*)`);
  return new RegExp(groups.join("|"), "g");
}

const TOKEN_PATTERNS = {
  c: tokenPattern(String.raw`\/\/[^\n]*|\/\*[\s\S]*?\*\/`, String.raw`#[^\n]*`,
                  String.raw`"(?:[^"\\]|\\.)*"`, String.raw`\b\d+\.?\d*(?:e[-+]?\d+)?f?\b`),
  python: tokenPattern(String.raw`#[^\n]*`, String.raw`@[\w.]+`,
                       String.raw`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`,
                       String.raw`\b\d+\.?\d*(?:e[-+]?\d+)?\b`),
};

function languageFamily(language) {
  const name = String(language || "").toLowerCase();
  if (name === "python") return "python";
  if (name === "ir") return "ir";
  return "c";
}

function highlightSource(text, language) {
  const family = languageFamily(language);
  const keywords = new Set(KEYWORDS[family]);
  const pattern = TOKEN_PATTERNS[family === "ir" ? "python" : family];
  const fragment = document.createDocumentFragment();
  let last = 0;
  pattern.lastIndex = 0;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    if (match.index > last) fragment.append(document.createTextNode(text.slice(last, match.index)));
    fragment.append(tokenSpan(match, keywords));
    last = match.index + match[0].length;
  }
  if (last < text.length) fragment.append(document.createTextNode(text.slice(last)));
  return fragment;
}

function tokenSpan(match, keywords) {
  const [word, comment, directive, string, number, call] = match;
  let kind = "name";
  if (comment) kind = "comment";
  else if (directive) kind = "directive";
  else if (string) kind = "string";
  else if (number) kind = "number";
  else if (keywords.has(word)) kind = "keyword";
  else if (call) kind = "call";
  if (kind === "name") return document.createTextNode(word);
  const span = document.createElement("span");
  span.className = `tl-tok-${kind}`;
  span.textContent = word;
  return span;
}
