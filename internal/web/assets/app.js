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

  // pair is "a ua b ub", or "a ua" when b is zero.
  function pair(a, ua, b, ub) {
    return a + ' ' + ua + (b ? ' ' + b + ' ' + ub : '');
  }

  // words says ms milliseconds as consent.ShowDuration does (its copy: the two must agree):
  // two units at most, the smaller left out when zero, rounded to the smaller unit shown.
  function words(ms) {
    var s = Math.round(Math.abs(ms) / 1000);
    if (s < 3600) return s < 60 ? s + ' s' : pair(Math.floor(s / 60), 'min', s % 60, 's');
    var m = Math.round(Math.abs(ms) / 60000);
    if (m < 24 * 60) return pair(Math.floor(m / 60), 'h', m % 60, 'min');
    var h = Math.round(Math.abs(ms) / 3600000);
    return pair(Math.floor(h / 24), Math.floor(h / 24) === 1 ? 'day' : 'days', h % 24, 'h');
  }

  function when(ms) {
    var d = Math.round((ms - (Date.now() + skew)) / 1000);
    if (d <= 0) return 'none';
    return words(d * 1000);
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
    function badge(show, cls, text) {
      if (!show) return;
      badges.appendChild(el('span', 'badge ' + cls, text));
      badges.appendChild(document.createTextNode(' '));
    }
    badge(r.high_risk, 'high', 'high risk');
    badge(r.irreversible, 'irrev', 'irreversible');
    badge(r.revocable, 'revocable', 'revocable');
    badge(r.lookalikes && r.lookalikes.length, 'lookalike', 'look-alike characters');
    a.appendChild(badges);
    if (r.lookalikes && r.lookalikes.length) {
      var lk = el('div', 'lookalikes');
      var lp = el('p');
      lp.appendChild(el('strong', 'warn', 'Some of what was sent holds characters that pass for others, are invisible or reorder the text:'));
      lk.appendChild(lp);
      var lu = el('ul');
      r.lookalikes.forEach(function (x) {
        var li = el('li');
        li.appendChild(el('span', 'field', x.field));
        li.appendChild(document.createTextNode(': ' + (x.flags || []).join('; ')));
        (x.shown || []).forEach(function (w) {
          li.appendChild(document.createTextNode(' '));
          li.appendChild(el('code', 'escaped', w));
        });
        lu.appendChild(li);
      });
      lk.appendChild(lu);
      a.appendChild(lk);
    }
    var dl = el('dl');
    row(dl, 'Capability', r.capability_id, '', true);
    row(dl, 'Permission', r.permission, '', true);
    row(dl, 'Permissions asked for', r.grants, '', true);
    if (r.token) {
      row(dl, 'Uses', r.uses, 'uses');
      row(dl, 'Lasts', r.lifetime, 'lifetime');
      var cs = row(dl, 'Constraints', ' ', 'constraints');
      cs.textContent = '';
      var cu = el('ul');
      (r.constraints || []).forEach(function (c) { cu.appendChild(el('li', '', c)); });
      cs.appendChild(cu);
    }
    row(dl, 'Risk', r.risk, 'risk');
    row(dl, 'Side effects', r.side_effects);
    row(dl, 'Can it be undone?', r.undo, 'undo');
    row(dl, 'Reason given', r.reason, 'text reason');
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
    if (r.difference && r.difference.length) {
      var df = el('details', 'diff');
      df.open = true;
      df.appendChild(el('summary', '', 'What changed (- pinned, + now)'));
      var dul = el('ul', 'diff-lines');
      r.difference.forEach(function (x) {
        var li = el('li', x.sign === '-' ? 'del' : x.sign === '+' ? 'add' : '');
        li.appendChild(el('code', '', x.text));
        dul.appendChild(li);
      });
      df.appendChild(dul);
      a.appendChild(df);
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
    } else if (r.form) {
      // A tool server's form is filled in on the request's own page, never approved bare.
      var fl = el('ul', 'form-fields');
      r.form.forEach(function (f) {
        var li = el('li');
        li.appendChild(el('code', '', f.name));
        li.appendChild(document.createTextNode(' '));
        li.appendChild(el('span', 'text', f.label + (f.required ? ' (required)' : '')));
        fl.appendChild(li);
      });
      a.appendChild(fl);
      act.appendChild(form(r.id, 'deny', 'Decline'));
      var fp = el('p', 'link');
      var fa = el('a', '', 'fill in the form on its own page');
      fa.href = '/ui/requests/' + encodeURIComponent(r.id);
      fp.appendChild(fa);
      act.appendChild(fp);
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
    if (r.kind === 'pin') {
      var pp = el('p', 'link');
      var pl = el('a', '', 'the tool servers on the apps page');
      pl.href = '/ui/apps#toolservers';
      pp.appendChild(pl);
      a.appendChild(pp);
    }
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
