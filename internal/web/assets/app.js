// capgate approval page: new requests appear without a reload, and countdowns stay current.
// It builds the page with createElement and textContent only, never innerHTML: whatever an
// agent, an app or a tool server wrote stays text. Without it the page still works; it just
// needs a reload to show new requests.
(function () {
  'use strict';
  var skew = 0; // the server's clock minus this browser's, in ms

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function when(ms) {
    var d = Math.round((ms - (Date.now() + skew)) / 1000);
    if (d <= 0) return 'none';
    if (d < 60) return d + ' s';
    return Math.floor(d / 60) + ' min ' + (d % 60) + ' s';
  }

  function tick() {
    document.querySelectorAll('.countdown[data-until]').forEach(function (e) {
      e.textContent = when(Number(e.getAttribute('data-until')));
    });
  }

  function csrf() {
    var m = document.querySelector('meta[name="csrf"]');
    return m ? m.getAttribute('content') : '';
  }

  function live(text) {
    var e = document.getElementById('live');
    if (e) e.textContent = text;
  }

  // row adds a term and its value to dl, when there is a value.
  function row(dl, term, value, cls, code) {
    if (!value) return null;
    dl.appendChild(el('dt', '', term));
    var dd = el('dd', cls || '');
    if (code) dd.appendChild(el('code', '', value)); else dd.textContent = value;
    dl.appendChild(dd);
    return dd;
  }

  function form(id, verb, label) {
    var f = el('form');
    f.method = 'post';
    f.action = '/ui/requests/' + encodeURIComponent(id) + '/' + verb;
    var t = el('input');
    t.type = 'hidden';
    t.name = 'csrf';
    t.value = csrf();
    f.appendChild(t);
    var b = el('button', verb, label);
    b.type = 'submit';
    f.appendChild(b);
    return f;
  }

  // card mirrors the "card" template of assets/card.html.
  function card(r) {
    var a = el('article', 'card' + (r.high_risk ? ' risk-high' : '') + (r.irreversible ? ' irreversible' : ''));
    a.id = 'r-' + r.id;
    a.setAttribute('data-id', r.id);
    a.setAttribute('data-expires', String(r.expires_ms));
    var h = el('h2');
    h.appendChild(el('span', 'client', r.client));
    h.appendChild(document.createTextNode(' '));
    h.appendChild(el('span', 'what', r.what));
    a.appendChild(h);
    if (r.summary) a.appendChild(el('p', 'summary', r.summary));
    var badges = el('p', 'badges');
    if (r.high_risk) { badges.appendChild(el('span', 'badge high', 'high risk')); badges.appendChild(document.createTextNode(' ')); }
    if (r.irreversible) badges.appendChild(el('span', 'badge irrev', 'irreversible'));
    a.appendChild(badges);
    var dl = el('dl');
    row(dl, 'Capability', r.capability_id, '', true);
    row(dl, 'Permission', r.permission, '', true);
    row(dl, 'Permissions asked for', r.grants, '', true);
    row(dl, 'Risk', r.risk, 'risk');
    row(dl, 'Side effects', r.side_effects);
    row(dl, 'Undo', r.undo, 'undo');
    row(dl, 'Reason given', r.reason, 'text');
    row(dl, 'Audit tag', r.audit_tag);
    var until = r.commit ? r.window_ms : r.expires_ms;
    var cd = row(dl, r.commit ? 'Goes ahead unless cancelled in' : 'Time left to answer', when(until), 'countdown');
    cd.setAttribute('data-until', String(until));
    a.appendChild(dl);
    if (r.urls && r.urls.length) {
      var u = el('div', 'urls');
      u.appendChild(el('p', '', 'Addresses in the params (shown, not opened):'));
      var ul = el('ul');
      r.urls.forEach(function (x) {
        var li = el('li');
        var s = el('span', 'url');
        s.appendChild(document.createTextNode(x.before));
        if (x.host) s.appendChild(el('mark', '', x.host));
        s.appendChild(document.createTextNode(x.after));
        li.appendChild(s);
        if (x.lookalike) { li.appendChild(document.createTextNode(' ')); li.appendChild(el('strong', 'flag', 'look-alike characters')); }
        if (x.escaped) { li.appendChild(document.createTextNode(' ')); li.appendChild(el('code', 'escaped', x.escaped)); }
        (x.flags || []).forEach(function (f) { li.appendChild(el('span', 'note', f)); });
        ul.appendChild(li);
      });
      u.appendChild(ul);
      a.appendChild(u);
    }
    if (r.params) {
      var d = el('details', 'params');
      d.open = true;
      d.appendChild(el('summary', '', 'Params'));
      d.appendChild(el('pre', '', r.params));
      a.appendChild(d);
    }
    var act = el('div', 'actions');
    if (r.commit) {
      act.appendChild(form(r.id, 'cancel', 'Cancel'));
    } else {
      var ap = form(r.id, 'approve', 'Approve');
      if (r.can_remember) {
        var l = el('label', 'remember');
        var c = el('input');
        c.type = 'checkbox';
        c.name = 'remember';
        c.value = 'true';
        l.appendChild(c);
        l.appendChild(document.createTextNode(' remember this agreement: \u201c'));
        l.appendChild(el('span', 'wording', r.wording));
        l.appendChild(document.createTextNode('\u201d'));
        ap.insertBefore(l, ap.lastChild);
      }
      act.appendChild(ap);
      act.appendChild(form(r.id, 'deny', 'Deny'));
    }
    a.appendChild(act);
    var p = el('p', 'link');
    var link = el('a', '', 'this request on its own page');
    link.href = '/ui/requests/' + encodeURIComponent(r.id);
    p.appendChild(link);
    a.appendChild(p);
    return a;
  }

  // update makes the list show exactly data.requests, in their order (newest first), keeping
  // the cards already shown so that a half-ticked checkbox is not lost.
  function update(data) {
    skew = data.now_ms - Date.now();
    var list = document.getElementById('requests');
    var seen = {};
    data.requests.forEach(function (r, i) {
      seen[r.id] = true;
      var c = document.getElementById('r-' + r.id) || card(r);
      if (list.children[i] !== c) list.insertBefore(c, list.children[i] || null);
    });
    Array.prototype.slice.call(list.children).forEach(function (c) {
      if (!seen[c.getAttribute('data-id')]) list.removeChild(c);
    });
    document.getElementById('empty').hidden = data.requests.length > 0;
    tick();
  }

  function poll() {
    fetch('/ui/requests.json', { credentials: 'same-origin', cache: 'no-store', headers: { 'Accept': 'application/json' } })
      .then(function (resp) {
        if (resp.status === 401) { live('Signed out: open a new login link.'); return null; }
        if (!resp.ok) throw new Error('HTTP ' + resp.status);
        return resp.json();
      })
      .then(function (d) { if (d) { update(d); live('Up to date.'); } })
      .catch(function () { live('capgate cannot be reached; trying again.'); });
  }

  document.addEventListener('DOMContentLoaded', function () {
    tick();
    setInterval(tick, 1000);
    if (document.getElementById('requests')) {
      poll();
      setInterval(poll, 2000);
    }
  });
})();
