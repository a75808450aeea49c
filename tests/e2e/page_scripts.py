"""The JavaScript that test_lab.py runs in the page to measure what JupyterLab shows."""

# Per code cell, in order: the text of its outputs and how many pictures they hold.
OUTPUTS_JS = """() => Array.from(document.querySelectorAll('.jp-Notebook .jp-CodeCell'), (c) => {
    const area = c.querySelector('.jp-OutputArea');
    if (!area) return {text: '', pictures: 0, errors: 0, stderr: ''};
    const pictures = 'img, svg.main-svg, .absnb-graph svg, .jp-RenderedSVG';
    const stderr = '[data-mime-type="application/vnd.jupyter.stderr"]';
    return {
        text: area.innerText,
        pictures: area.querySelectorAll(pictures).length,
        errors: Array.from(area.querySelectorAll(stderr), (e) => e.innerText)
            .filter((t) => /Traceback|Error/.test(t)).length,
        stderr: Array.from(area.querySelectorAll(stderr), (e) => e.innerText).join(' | '),
    };
})"""

# Every graph node of every widget: is it inside its cell's output and the viewport's width,
# and how high (px) are its labels.
GEOMETRY_JS = """(root) => {
    const roots = root === null ? Array.from(document.querySelectorAll('.absnb-stepper')) : [root];
    const out = [];
    for (const r of roots) {
        const area = r.closest('.jp-OutputArea-output') || r;
        const box = area.getBoundingClientRect();
        for (const svg of r.querySelectorAll('.absnb-graph svg')) {
            const scale = svg.getScreenCTM().a;
            for (const node of svg.querySelectorAll('g.node')) {
                const b = node.getBoundingClientRect();
                const sizes = Array.from(node.querySelectorAll('text'),
                    (t) => parseFloat(t.getAttribute('font-size')) * scale);
                out.push({
                    name: node.querySelector('title').textContent,
                    compare: Array.from(r.classList).some((c) => c.startsWith('absnb-compare-')),
                    left: b.left, right: b.right, cellLeft: box.left, cellRight: box.right,
                    viewport: window.innerWidth, font: Math.min(...sizes),
                });
            }
        }
    }
    return out;
}"""

# Scrolled as a class sees it (a compare view from its controls down, a stepper's graph
# from its top): the nodes of its graphs that are outside the notebook's visible
# area or covered (at their centre, top or bottom: the sticky row of Step and Back must not
# hide a node's last line), the Step button's place, and the smallest label (px).
VISIBLE_JS = """(r) => {
    const outer = r.closest('.jp-WindowedPanel-outer, .jp-Notebook');
    const compare = Array.from(r.classList).some((c) => c.startsWith('absnb-compare-'));
    if (compare) {
        outer.scrollTop += r.getBoundingClientRect().top - outer.getBoundingClientRect().top;
    } else {  // the graph's top at the view's top, as a presenter scrolls to it
        const g = r.querySelector('.absnb-graph').getBoundingClientRect();
        outer.scrollTop += g.top - outer.getBoundingClientRect().top;
    }
    const view = outer.getBoundingClientRect();
    const out = [];
    let font = Infinity;
    for (const svg of r.querySelectorAll('.absnb-graph svg')) {
        const scale = svg.getScreenCTM().a;
        for (const node of svg.querySelectorAll('g.node')) {
            const b = node.getBoundingClientRect();
            for (const t of node.querySelectorAll('text')) {
                font = Math.min(font, parseFloat(t.getAttribute('font-size')) * scale);
            }
            const right = Math.min(view.right, window.innerWidth);
            const inside = b.top >= view.top - 1 && b.bottom <= view.bottom + 1
                && b.left >= view.left - 1 && b.right <= right + 1;
            // the node's centre and its first and last lines of text: none covered
            const x = (b.left + b.right) / 2;
            const covered = [(b.top + b.bottom) / 2, b.top + 4, b.bottom - 4].some((y) => {
                const hit = document.elementFromPoint(x, y);
                return !hit || !hit.closest('.absnb-graph');
            });
            if (!inside || covered) {
                out.push(node.querySelector('title').textContent);
            }
        }
    }
    const step = r.querySelector('.absnb-step').getBoundingClientRect();
    return {compare, hidden: out, font,
            stepInView: step.top >= view.top - 1 && step.bottom <= view.bottom + 1};
}"""

GRAPHS_JS = (
    """(root) => Array.from(root.querySelectorAll('.absnb-graph'), (g) => g.innerHTML).join('|')"""
)

# Scrolled as a reader does to see the bottom of a widget's graph: where Step and Back are and
# whether they are on top, the graph's bottom row of nodes hidden under the sticky controls,
# and the sizes of the graph, the view and the row of controls.
CONTROLS_STAY_JS = """(r) => {
    const graph = r.querySelector('.absnb-graph');
    const row = r.querySelector('.absnb-controls');
    // In the presentation layout the row comes after the graph: a reader scrolls it
    // into view too. Scroll the notebook itself (scrollIntoView would also shift
    // JupyterLab's own overflow-hidden panels).
    const after = graph.compareDocumentPosition(row) & Node.DOCUMENT_POSITION_FOLLOWING;
    const outer = r.closest('.jp-WindowedPanel-outer, .jp-Notebook');
    outer.scrollTop += graph.getBoundingClientRect().bottom
        - outer.getBoundingClientRect().bottom + 4
        + (after ? row.getBoundingClientRect().height : 0);
    const g = graph.getBoundingClientRect();
    const view = outer.getBoundingClientRect();
    const buttons = [];
    for (const cls of ['absnb-step', 'absnb-back']) {
        const b = r.querySelector('.' + cls).getBoundingClientRect();
        const hit = document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2);
        buttons.push({cls, top: b.top, bottom: b.bottom,
                      onTop: !!hit && !!hit.closest('.' + cls)});
    }
    const nodes = Array.from(graph.querySelectorAll('svg g.node'),
        (n) => [n, n.getBoundingClientRect()]);
    const lowest = Math.max(...nodes.map(([, b]) => b.top));
    const hidden = nodes.filter(([, b]) => b.top >= lowest - 2).filter(([, b]) => {
        const hit = document.elementFromPoint((b.left + b.right) / 2, (b.top + b.bottom) / 2);
        return !hit || !hit.closest('.absnb-graph');
    }).map(([n]) => n.querySelector('title').textContent);
    return {buttons, hidden, graphBottom: g.bottom, viewTop: view.top,
            viewBottom: view.bottom, rowHeight: row.getBoundingClientRect().height};
}"""

# Every text of a widget's graphs as the browser drew it: a node's text outside its box
# (the font Graphviz measured is not the one drawn), a text past the picture's right edge,
# and the wide characters (Korean, Chinese) drawn as the empty box of a missing glyph: one
# that draws exactly as an unassigned code point does in the same font.
LABELS_JS = """(root) => {
    const overflow = [], missing = new Set();
    const canvas = document.createElement('canvas');
    canvas.width = 40; canvas.height = 40;
    const ctx = canvas.getContext('2d', {willReadFrequently: true});
    const draw = (ch, family) => {
        ctx.clearRect(0, 0, 40, 40);
        ctx.font = `28px ${family}`;
        ctx.fillText(ch, 4, 32);
        return Array.from(ctx.getImageData(0, 0, 40, 40).data).join(',');
    };
    const seen = new Map();
    let texts = 0, wide = 0;
    for (const svg of root.querySelectorAll('.absnb-graph svg')) {
        const view = svg.viewBox.baseVal;
        for (const t of svg.querySelectorAll('text')) {
            texts += 1;
            const b = t.getBBox();
            if (view && view.width && b.x + b.width > view.x + view.width + 1) {
                overflow.push(`${t.textContent} (past the picture's edge)`);
            }
            const family = t.getAttribute('font-family') || 'sans-serif';
            for (const ch of t.textContent) {
                if (ch.codePointAt(0) < 0x1100) continue;
                wide += 1;
                const key = family + ch;
                if (!seen.has(key)) {
                    seen.set(key, draw(ch, family) === draw('\\u{10FFFD}', family));
                }
                if (seen.get(key)) missing.add(ch);
            }
        }
        for (const node of svg.querySelectorAll('g.node')) {
            const shape = node.querySelector('path, polygon, ellipse');
            if (!shape) continue;
            const s = shape.getBBox();
            for (const t of node.querySelectorAll('text')) {
                const b = t.getBBox();
                if (b.x < s.x - 1 || b.x + b.width > s.x + s.width + 1) {
                    overflow.push(`${node.querySelector('title').textContent}: ${t.textContent}`);
                }
            }
        }
    }
    return {texts, wide, overflow, missing: Array.from(missing)};
}"""
