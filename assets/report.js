// memform report.html: draws a run's or a comparison's tables from the JSON
// embedded in this page. No library, no network. `#selftest` in the URL
// applies a filter and opens drill-downs, and writes what it found as JSON
// into a pre element with the id selftest (the browser test reads it).
(function () {
  'use strict';
  var errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message)); });
  var D = JSON.parse(document.getElementById('memform-data').textContent);
  var app = document.getElementById('app');
  var LIMIT = 400;

  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        if (k === 'text') e.textContent = attrs[k];
        else if (k === 'cls') e.className = attrs[k];
        else if (k.slice(0, 2) === 'on') e.addEventListener(k.slice(2), attrs[k]);
        else e.setAttribute(k, attrs[k]);
      }
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  // Appends a child: a node, text, a number, or a (nested) list of them.
  function add(e, kid) {
    if (kid === null || kid === undefined || kid === false) return;
    if (Array.isArray(kid)) kid.forEach(function (x) { add(e, x); });
    else e.appendChild(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  // Markdown-lite for caveats: **bold** and `code`, everything else as text.
  function inline(s, tagName) {
    var span = el(tagName || 'span');
    String(s).split(/(\*\*[^*]+\*\*|`[^`]+`)/).forEach(function (part) {
      if (/^\*\*[^*]+\*\*$/.test(part)) span.appendChild(inline(part.slice(2, -2), 'b'));
      else if (/^`[^`]+`$/.test(part)) span.appendChild(el('code', { text: part.slice(1, -1) }));
      else if (part) span.appendChild(document.createTextNode(part));
    });
    return span;
  }
  function fmt(x) {
    if (x === null || x === undefined) return '–';
    if (typeof x === 'number') return Number.isInteger(x) ? String(x) : x.toFixed(3);
    return String(x);
  }
  function tag(text, kind) { return el('span', { cls: 'tag' + (kind ? ' ' + kind : ''), text: text }); }
  function table(head, rows, numeric) {
    var thead = head.join('') === '' ? null : el('thead', null, el('tr', null, head.map(function (h, i) { return el('th', { cls: numeric && i > 0 ? 'num' : '', text: h }); })));
    var tbody = el('tbody', null, rows.map(function (r) {
      return el('tr', null, r.map(function (c, i) { return el('td', { cls: numeric && i > 0 ? 'num' : '' }, c instanceof Node ? c : fmt(c)); }));
    }));
    return el('div', { cls: 'wrap' }, el('table', null, thead, tbody));
  }
  function uniq(xs) { var s = {}; var out = []; xs.forEach(function (x) { if (!(x in s)) { s[x] = 1; out.push(x); } }); return out.sort(); }

  app.textContent = '';
  app.appendChild(el('h1', { text: D.title }));
  (D.caveats || []).forEach(function (c) { app.appendChild(el('div', { cls: 'caveat' }, inline(c))); });

  // ---------------------------------------------------------------------
  // The explorer: tabs, a filter bar, a table whose rows open a detail row.
  var state = { tab: null, conv: '', cat: '', show: 'all' };
  var views = {};
  var bar, tabsEl, tbodyEl, theadEl, countEl, convSel, catSel, showSel;

  var order = [];
  function explorer(names) {
    order = names;
    app.appendChild(el('h2', { text: 'Explore' }));
    tabsEl = el('div', { cls: 'tabs', id: 'tabs' });
    names.forEach(function (n) {
      tabsEl.appendChild(el('button', { 'data-tab': n, text: views[n].label, onclick: function () { setTab(n); } }));
    });
    app.appendChild(tabsEl);
    convSel = el('select', { id: 'f-conv', onchange: function () { state.conv = convSel.value; draw(); } });
    catSel = el('select', { id: 'f-cat', onchange: function () { state.cat = catSel.value; draw(); } });
    showSel = el('select', { id: 'f-show', onchange: function () { state.show = showSel.value; draw(); } });
    countEl = el('span', { cls: 'count', id: 'count' });
    bar = el('div', { cls: 'bar' },
      el('label', null, 'conversation', convSel),
      el('label', { id: 'l-cat' }, 'category', catSel),
      el('label', null, 'show', showSel), countEl);
    app.appendChild(bar);
    app.appendChild(el('p', { cls: 'note', id: 'view-note' }));
    theadEl = el('thead');
    tbodyEl = el('tbody', { id: 'rows' });
    app.appendChild(el('div', { cls: 'wrap' }, el('table', { id: 'explore' }, theadEl, tbodyEl)));
    setTab(names[0]);
  }
  function options(sel, pairs, value) {
    sel.textContent = '';
    pairs.forEach(function (p) { sel.appendChild(el('option', { value: p[0], text: p[1] })); });
    sel.value = value;
    if (sel.value !== value) sel.value = pairs.length ? pairs[0][0] : '';
  }
  function setTab(n) {
    state.tab = n;
    var v = views[n];
    Array.prototype.forEach.call(tabsEl.children, function (b) { b.className = b.getAttribute('data-tab') === n ? 'on' : ''; });
    options(convSel, [['', 'all']].concat(uniq(v.items.map(function (r) { return r.c; })).map(function (c) { return [c, c]; })), state.conv);
    state.conv = convSel.value;
    var cats = v.category ? uniq(v.items.map(v.category)) : [];
    document.getElementById('l-cat').style.display = cats.length ? '' : 'none';
    options(catSel, [['', 'all']].concat(cats.map(function (c) { return [c, c]; })), state.cat);
    state.cat = catSel.value;
    options(showSel, v.filters.map(function (f) { return [f[0], f[1]]; }), 'all');
    state.show = showSel.value;
    document.getElementById('view-note').textContent = v.note || '';
    theadEl.textContent = '';
    theadEl.appendChild(el('tr', null, v.head.map(function (h) { return el('th', { text: h }); })));
    draw();
  }
  function visible() {
    var v = views[state.tab];
    var f = v.filters.filter(function (x) { return x[0] === state.show; })[0];
    return v.items.filter(function (r) {
      return (!state.conv || r.c === state.conv) && (!state.cat || !v.category || v.category(r) === state.cat) && (!f || f[2](r));
    });
  }
  function draw() {
    var v = views[state.tab];
    var rows = visible();
    tbodyEl.textContent = '';
    rows.slice(0, LIMIT).forEach(function (r) {
      var tr = el('tr', { cls: 'row' }, v.cells(r).map(function (c) { return el('td', null, c instanceof Node ? c : fmt(c)); }));
      tr.addEventListener('click', function () { toggle(tr, r, v); });
      tbodyEl.appendChild(tr);
    });
    countEl.textContent = rows.length + ' of ' + v.items.length + ' shown' + (rows.length > LIMIT ? ' (the first ' + LIMIT + ' drawn: narrow with the filters)' : '');
  }
  function toggle(tr, r, v) {
    var next = tr.nextSibling;
    if (next && next.className === 'detail') { next.parentNode.removeChild(next); tr.className = 'row'; return; }
    tr.className = 'row open';
    var td = el('td', { colspan: String(v.head.length) }, v.detail(r));
    tr.parentNode.insertBefore(el('tr', { cls: 'detail' }, td), tr.nextSibling);
  }

  // ---------------------------------------------------------------------
  // A run.
  function runPage() {
    app.appendChild(el('h2', { text: 'What was run' }));
    app.appendChild(table(['', ''], D.what.map(function (r) { return [r[0], inline(r[1])]; })));
    app.appendChild(el('h2', { text: 'Headline' }));
    if (D.budgeted) {
      app.appendChild(el('h3', { text: 'Retrieval at equal reading cost (QA, 95% intervals)' }));
      app.appendChild(el('div', { id: 'budgeted' }, table(['source'].concat(D.budgeted.cols), D.budgeted.rows, true)));
    }
    app.appendChild(table(['metric', 'value', 'meaning'], D.headline.map(function (h) {
      return [el('code', { text: h[0] }), h[1] === 'n/a' ? tag('n/a', 'bad') : h[1], h[2]];
    })));
    app.appendChild(el('h2', { text: 'Per conversation' }));
    app.appendChild(el('div', { id: 'per-conversation' }, table(['conversation'].concat(D.conversations.cols), D.conversations.rows, true)));

    var byId = {};
    D.facts.forEach(function (f) { byId[f.id] = f; });
    function factLine(id) {
      var f = byId[id];
      return f ? [el('code', { text: id }), ' «', f.x, '»'] : [el('code', { text: id })];
    }
    function endState(f) {
      if (!f.s) return tag('not stored', 'bad');
      if (f.l) return tag('live', 'good');
      return f.by ? el('span', null, tag('ended', 'bad'), ' by ', factLine(f.by)) : tag('not live', 'bad');
    }
    function trail(f) {
      var steps = [];
      steps.push(el('li', null, 'extracted at ', el('code', { text: f.c + ' / ' + f.e + ' / ' + f.t }), ' as ', f.ty,
        f.cf !== null && f.cf !== undefined ? ', confidence ' + fmt(f.cf) : ''));
      var dedupe = { exact_duplicate: 1, near_duplicate: 1, deduped: 1 };
      steps.push(el('li', null, 'dedupe: ', dedupe[f.o] ? el('span', null, tag(f.o, 'bad'), f.rel ? [' of ', factLine(f.rel)] : null) : 'passed'));
      if (f.p.length) {
        steps.push(el('li', null, 'judged against ' + f.p.length + ' live fact(s):', el('ul', null, f.p.map(function (p) {
          var guard = p[5] ? [' guard ', tag(p[5])] : null;
          var changed = p[2] && p[2] !== p[1] ? [' (the judge said ', el('code', { text: p[2] }), ')'] : null;
          return el('li', null, factLine(p[0]), ': verdict ', el('code', { text: p[1] }), changed, ', paired because ', p[3], guard, p[4] ? [' ', tag('review', 'bad')] : null);
        }))));
      } else {
        steps.push(el('li', null, 'judge: no pair'));
      }
      steps.push(el('li', null, 'write: ', tag(f.o, f.s ? 'good' : 'bad'), f.r ? ' (' + f.r + ')' : '',
        f.end.length ? el('span', null, '; ended ', f.end.map(function (id, i) { return el('span', null, i ? ', ' : '', factLine(id)); })) : null));
      steps.push(el('li', null, 'end state: ', endState(f), f.g ? [' · matches gold ', el('code', { text: f.g })] : null));
      return el('div', { cls: 'card' }, el('div', { cls: 'fact', text: f.x }), el('ol', null, steps));
    }

    views.facts = {
      label: 'Candidates (' + D.facts_total + ')', items: D.facts,
      head: ['conversation / episode / turn', 'candidate', 'outcome', 'pairs', 'end state', 'gold'],
      note: D.facts_total > D.facts.length ? 'The first ' + D.facts.length + ' of ' + D.facts_total + ' candidates are embedded.' : 'Every candidate fact; click one for its decision trail.',
      filters: [
        ['all', 'all', function () { return true; }],
        ['unmatched', 'stored, live, matching no gold fact', function (f) { return f.l && !f.g && D.gold.length > 0; }],
        ['dropped', 'not stored', function (f) { return !f.s; }],
        ['invalidations', 'invalidations (ended a fact or was ended)', function (f) { return f.end.length > 0 || !!f.by; }],
        ['updates', 'UPDATEs', function (f) { return f.o === 'updated'; }],
        ['judged', 'judged against a live fact', function (f) { return f.p.length > 0; }]
      ],
      cells: function (f) { return [f.c + ' / ' + f.e + ' / ' + f.t, f.x, tag(f.o, f.s ? 'good' : 'bad'), f.p.length, endState(f), f.g || '–']; },
      detail: trail
    };

    views.gold = {
      label: 'Gold facts (' + D.gold.length + ')', items: D.gold,
      head: ['conversation / episode', 'gold fact', 'evidence', 'outcome'],
      note: D.gold_note ? 'Gold facts not listed: ' + D.gold_note + '.' : 'Each gold fact; click one for the stored facts it matched and every candidate from its evidence turns.',
      filters: [
        ['all', 'all', function () { return true; }],
        ['missed', 'missed (no stored fact matches)', function (g) { return !!g.miss; }],
        ['matched', 'matched', function (g) { return !g.miss; }]
      ].concat((D.errors.causes || []).map(function (c) { return ['cause:' + c[0], 'missed: ' + c[1], function (g) { return g.miss === c[0]; }]; })),
      cells: function (g) { return [g.c + ' / ' + g.e, g.x, g.ev.join(' '), g.miss ? tag('missed: ' + g.miss, 'bad') : tag('matched', 'good')]; },
      detail: function (g) {
        return el('div', null,
          el('h3', { text: 'Stored facts matching it (' + g.m.length + ')' }),
          g.m.length ? g.m.map(function (id) { return byId[id] ? trail(byId[id]) : el('div', { text: id }); }) : el('p', { cls: 'muted', text: 'none' }),
          el('h3', { text: 'Candidates from its evidence turns (' + g.from.length + ')' }),
          g.from.length ? g.from.map(function (id) { return byId[id] ? trail(byId[id]) : el('div', { text: id }); }) : el('p', { cls: 'muted', text: 'none: no candidate was extracted from ' + g.ev.join(', ') }));
      }
    };

    var formedMiss = {}, rawMiss = {};
    D.errors.formed_missed_raw_found.forEach(function (k) { formedMiss[k] = 1; });
    D.errors.raw_missed_formed_found.forEach(function (k) { rawMiss[k] = 1; });
    function r200(q, s) { return q.s[s] ? q.s[s].r200 : null; }
    views.qa = {
      label: 'QA items (' + D.qa_total + ')', items: D.qa, category: function (q) { return q.cat; },
      head: ['conversation / item', 'category', 'question', 'formed: first hit', 'formed @200w', 'raw turns @200w'],
      note: 'Each QA item; click one for what each source retrieved (rank, score, whether it is evidence) and what formed memory holds for its evidence turns.' + (D.qa_total > D.qa.length ? ' The first ' + D.qa.length + ' of ' + D.qa_total + ' are embedded.' : ''),
      filters: [
        ['all', 'all', function () { return true; }],
        ['miss', 'formed memory misses (@200w)', function (q) { return r200(q, 'formed') === 0; }],
        ['formed-miss-raw-hit', 'formed misses, raw turns find', function (q) { return !!formedMiss[q.c + '/' + q.i]; }],
        ['raw-miss-formed-hit', 'raw turns miss, formed finds', function (q) { return !!rawMiss[q.c + '/' + q.i]; }],
        ['apart', 'adversarial or abstention (apart)', function (q) { return q.apart; }]
      ],
      cells: function (q) {
        var f = q.s.formed || {};
        var hit = function (x) { return x === null || x === undefined ? '–' : x > 0 ? tag('hit', 'good') : tag('miss', 'bad'); };
        return [q.c + ' / ' + q.i, q.cat, q.q, f.h ? fmt(f.h) : 'none in 10', hit(r200(q, 'formed')), hit(r200(q, 'raw_turns'))];
      },
      detail: function (q) {
        var parts = [el('p', null, 'evidence turns: ', el('code', { text: q.ev.join(' ') }))];
        ['formed', 'raw_turns', 'raw_sessions'].forEach(function (s) {
          var r = q.s[s];
          if (!r) return;
          parts.push(el('h3', { text: s.replace('_', ' ') + ': first hit ' + (r.h ? fmt(r.h) : 'none in the first 10') + ', recall_any@200w ' + fmt(r.r200) }));
          parts.push(table(['rank', 'retrieved', 'score', 'evidence'], r.r.map(function (x, i) {
            var what = s === 'formed' ? el('span', null, factLine(x[0])) : el('code', { text: x[0] });
            var ev = s === 'formed' ? (byId[x[0]] ? q.ev.indexOf(byId[x[0]].t) >= 0 : null) : s === 'raw_turns' ? q.ev.indexOf(x[0]) >= 0 : x[2];
            return [i + 1, what, x[1], ev === null || ev === undefined ? '?' : ev ? el('span', { cls: 'ev', text: 'yes' }) : 'no'];
          })));
        });
        parts.push(el('h3', { text: 'What formed memory holds for the evidence turns (' + q.holds.length + ')' }));
        parts.push(q.holds.length ? el('div', null, q.holds.map(function (id) { return byId[id] ? trail(byId[id]) : el('div', { text: id }); })) : el('p', { cls: 'muted', text: 'no candidate from these turns' }));
        return el('div', null, parts);
      }
    };

    views.pairs = {
      label: 'Pairs never judged (' + D.errors.never_judged.length + ')',
      items: D.errors.never_judged.map(function (p) { return { c: p[0], old: p[1], nw: p[2], verdict: p[3], why: p[4] }; }),
      head: ['conversation', 'old turn', 'new turn', 'gold verdict', 'why'],
      note: 'Labelled contradiction pairs with no listed judged pair.',
      filters: [['all', 'all', function () { return true; }]],
      cells: function (p) { return [p.c, p.old, p.nw, el('code', { text: p.verdict }), p.why]; },
      detail: function (p) {
        var at = function (t) { return D.facts.filter(function (f) { return f.c === p.c && f.t === t; }); };
        return el('div', null, el('h3', { text: 'Candidates from the old turn ' + p.old }), at(p.old).map(trail),
          el('h3', { text: 'Candidates from the new turn ' + p.nw }), at(p.nw).map(trail));
      }
    };
    var names = [];
    if (D.gold.length || D.gold_note) names.push('gold');
    names.push('facts');
    if (D.qa.length) names.push('qa');
    if (D.errors.never_judged.length) names.push('pairs');
    explorer(names);
  }

  // ---------------------------------------------------------------------
  // A comparison.
  function comparePage() {
    var V = D.variants;
    var letters = V.map(function (_, i) { return String.fromCharCode(65 + i); });
    app.appendChild(el('h2', { text: 'Variants' }));
    app.appendChild(table(['', 'label'], V.map(function (v, i) { return [letters[i], v]; })));
    var budgeted = /^qa_(.+_)?(recall_any_at_\d+w|answer_in_\d+w)$/;
    var headline = ['candidates', 'stored_facts', 'live_facts', 'invalidations', 'turn_f1', 'content_precision', 'content_recall', 'content_f1',
      'qa_evidence_coverage', 'dedup_f1', 'judge_accuracy', 'contradiction_accuracy', 'entity_resolution_rate'];
    var head = ['metric'].concat(letters, letters.slice(1).map(function (l) { return l + ' − A'; }));
    function metricRow(m) {
      var dir = m[3] === true ? ' ↑' : m[3] === false ? ' ↓' : '';
      var vals = m[1].map(function (x, i) { return m[4].indexOf(i) >= 0 ? tag('n/a', 'bad') : fmt(x); });
      var ups = m[2].map(function (u) {
        if (m[4].length) return '–';
        var x = Array.isArray(u) ? u[0] : u;
        var ci = Array.isArray(u) && u[1] !== null && u[1] !== undefined ? ' [' + fmt(u[1]) + ', ' + fmt(u[2]) + ']' : '';
        return (x > 0 ? '+' : '') + fmt(x) + ci;
      });
      return [el('span', null, el('code', { text: m[0] }), dir)].concat(vals, ups);
    }
    var qaRows = D.metrics.filter(function (m) { return budgeted.test(m[0]); });
    if (qaRows.length) {
      app.appendChild(el('h2', { text: 'Retrieval at equal reading cost (QA)' }));
      app.appendChild(el('div', { id: 'budgeted' }, table(head, qaRows.map(metricRow), true)));
    }
    app.appendChild(el('h2', { text: 'Headline' }));
    app.appendChild(el('div', { id: 'metrics' }, table(head, headline.map(function (k) {
      return D.metrics.filter(function (m) { return m[0] === k; })[0];
    }).filter(Boolean).map(metricRow), true)));
    app.appendChild(el('details', null, el('summary', { text: 'All ' + D.metrics.length + ' metrics (↑ higher is better, ↓ lower is better; 95% paired bootstrap intervals)' }),
      table(head, D.metrics.map(metricRow), true)));
    function status(s) { return s === 'matched' ? tag('matched', 'good') : tag(s, 'bad'); }
    views.gold = {
      label: 'Gold facts that differ (' + D.gold.length + ')', items: D.gold,
      head: ['conversation', 'gold fact'].concat(letters),
      note: 'Gold facts matched in some variants and missed in others.',
      filters: [['all', 'all', function () { return true; }]].concat(letters.map(function (l, i) {
        return ['missed-' + l, 'missed in ' + l, function (g) { return g.v[i][0] !== 'matched'; }];
      })),
      cells: function (g) { return [g.c, g.x || g.id].concat(g.v.map(function (x) { return status(x[0]); })); },
      detail: function (g) {
        return el('div', null, g.v.map(function (x, i) {
          return el('div', { cls: 'card' }, el('b', { text: letters[i] + ' (' + V[i] + '): ' }), status(x[0]),
            x[1].length ? el('ul', null, x[1].map(function (t) { return el('li', { text: t }); })) : el('p', { cls: 'muted', text: 'no stored fact matches it' }));
        }));
      }
    };
    views.qa = {
      label: 'QA items that differ (' + D.qa.length + ')', items: D.qa, category: function (q) { return q.cat; },
      head: ['conversation / item', 'category', 'question'].concat(letters),
      note: 'QA items formed memory finds (recall_any@200w) in some variants and not in others.',
      filters: [['all', 'all', function () { return true; }]].concat(letters.map(function (l, i) {
        return ['missed-' + l, 'missed in ' + l, function (q) { return !q.v[i] || q.v[i].r200 === 0; }];
      })),
      cells: function (q) {
        return [q.c + ' / ' + q.i, q.cat, q.q].concat(q.v.map(function (x) { return !x ? '–' : x.r200 > 0 ? tag('hit', 'good') : tag('miss', 'bad'); }));
      },
      detail: function (q) {
        return el('div', null, el('p', null, 'evidence turns: ', el('code', { text: q.ev.join(' ') })), q.v.map(function (x, i) {
          if (!x) return null;
          return el('div', { cls: 'card' }, el('b', { text: letters[i] + ' (' + V[i] + '): first hit ' + (x.h ? fmt(x.h) : 'none in the first 10') }),
            table(['rank', 'retrieved', 'evidence'], x.r.map(function (r, k) {
              return [k + 1, el('span', null, el('code', { text: r[0] }), r[1] ? ' «' + r[1] + '»' : ''), r[2] ? el('span', { cls: 'ev', text: 'yes' }) : 'no'];
            })));
        }));
      }
    };
    views.stored = {
      label: 'Stored facts in some variants (' + D.stored.length + ')', items: D.stored,
      head: ['conversation', 'stored fact'].concat(letters),
      note: 'Stored facts (by conversation and content) some variants stored and others did not.',
      filters: [['all', 'all', function () { return true; }]].concat(letters.map(function (l, i) {
        return ['only-' + l, 'not stored by ' + l, function (f) { return !f.v[i]; }];
      })),
      cells: function (f) { return [f.c, f.x].concat(f.v.map(function (b) { return b ? tag('stored', 'good') : tag('not stored', 'bad'); })); },
      detail: function (f) { return el('div', null, f.v.map(function (b, i) { return el('div', null, letters[i] + ' (' + V[i] + '): ' + (b ? 'stored' : 'not stored')); })); }
    };
    var names = [];
    if (D.gold.length) names.push('gold');
    if (D.qa.length) names.push('qa');
    names.push('stored');
    explorer(names);
  }

  if (D.kind === 'compare') comparePage(); else runPage();

  // ---------------------------------------------------------------------
  // Self-test: with #selftest, every tab is drawn, the first failure filter
  // that changes the rows is applied, and the first row's drill-down is
  // opened; the findings go into the pre element #selftest as JSON.
  if (location.hash === '#selftest') {
    var out = { kind: D.kind, tabs: [], ok: true };
    try {
      order.forEach(function (n) {
        setTab(n);
        var t = { tab: n, rows: tbodyEl.querySelectorAll('tr.row').length, total: views[n].items.length };
        views[n].filters.slice(1).some(function (f) {
          showSel.value = f[0];
          showSel.dispatchEvent(new Event('change'));
          var k = tbodyEl.querySelectorAll('tr.row').length;
          if (k !== t.rows && k > 0) { t.filter = f[0]; t.filtered = k; return true; }
          return false;
        });
        if (!t.filter) { showSel.value = 'all'; showSel.dispatchEvent(new Event('change')); }
        var first = tbodyEl.querySelector('tr.row');
        if (first) {
          first.dispatchEvent(new MouseEvent('click', { bubbles: true }));
          var d = tbodyEl.querySelector('tr.detail');
          t.detail = d ? d.textContent.length : 0;
        }
        out.tabs.push(t);
      });
      // Leave on screen the first tab whose first failure filter shows rows,
      // filtered, with its first row opened (else the first tab, unfiltered).
      var shown = order.filter(function (n) {
        setTab(n);
        var f = views[n].filters[1];
        if (!f) return false;
        showSel.value = f[0];
        showSel.dispatchEvent(new Event('change'));
        return tbodyEl.querySelectorAll('tr.row').length > 0;
      })[0];
      if (!shown) setTab(order[0]);
      else setTab(shown), showSel.value = views[shown].filters[1][0], showSel.dispatchEvent(new Event('change'));
      out.shown = state.tab + ':' + state.show;
      var row = tbodyEl.querySelector('tr.row');
      if (row) row.dispatchEvent(new MouseEvent('click', { bubbles: true }));
      out.caveats = document.querySelectorAll('.caveat').length;
      out.errors = errors;
      if (errors.length) out.ok = false;
    } catch (e) {
      out.ok = false;
      out.error = String(e && e.stack || e);
    }
    document.body.appendChild(el('pre', { id: 'selftest', text: JSON.stringify(out) }));
  }
})();
