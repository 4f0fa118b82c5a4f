// Skip logic on the page: the grammar of a question's `relevant` condition, its checks and its
// evaluation, the mirror of deniable.shared.conditions (docs/surveys.md#skip-logic). Nothing is
// evaluated as code: a tokenizer, a recursive-descent parser and a tree walk, with the limits
// checked before the work. tests/conformance/conditions.json holds both to the same results.
//
//   condition  := or ;  or := and ("or" and)* ;  and := not ("and" not)*
//   not        := "not" not | "(" condition ")" | comparison
//   comparison := operand OP operand | operand "in" "(" literal ("," literal)* ")"
//               | literal "in" qid
//   OP := == != < <= > >= ;  operand := qid | literal ;  literal := 'text' | "text" | number
//
// Values: a binary question's is 'yes' or 'no', a categorical's its option label, an integer's
// its number, a multi question's its selected labels (an array or a Set). A question not asked
// has no value: every comparison and `in` with it is false, except `!=`, which is true.

import { conditionKind } from "./mechanisms.js";

export const MAX_CONDITION = 1000;
export const MAX_DEPTH = 32;
export const MAX_DIGITS = 15;

// A condition that cannot be read or cannot hold; `category` is the same word as Python's.
export class ConditionError extends Error {
  constructor(category, message) {
    super(message);
    this.name = 'ConditionError';
    this.category = category;
  }
}

const SPACE = ' \t\r\n';
const KEYWORDS = new Set(['and', 'or', 'not', 'in']);
const OPERATORS = ['==', '!=', '<=', '>=', '<', '>'];
const NUMBER = /^-?[0-9]+(?:\.[0-9]+)?$/;
const QID = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const WORD = /[A-Za-z0-9_.-]/;

function syntax(message) {
  return new ConditionError('syntax', message);
}

function tokens(text) {
  const out = [];
  let i = 0;
  for (;;) {
    while (i < text.length && SPACE.includes(text[i])) i += 1;
    if (i === text.length) {
      out.push({ kind: 'end', value: null, at: i });
      return out;
    }
    const c = text[i];
    const op = OPERATORS.find((o) => text.startsWith(o, i));
    if (op) {
      out.push({ kind: 'op', value: op, at: i });
      i += op.length;
    } else if (c === '(' || c === ')' || c === ',') {
      out.push({ kind: 'punct', value: c, at: i });
      i += 1;
    } else if (c === "'" || c === '"') {
      const end = text.indexOf(c, i + 1);
      if (end < 0) throw syntax(`the text opened at character ${i + 1} is never closed`);
      out.push({ kind: 'text', value: text.slice(i + 1, end), at: i + 1 });
      i = end + 1;
    } else if (WORD.test(c)) {
      let j = i;
      while (j < text.length && WORD.test(text[j])) j += 1;
      out.push(word(text.slice(i, j), i));
      i = j;
    } else {
      throw syntax(`${JSON.stringify(c)} at character ${i + 1} cannot start anything`);
    }
  }
}

function word(text, at) {
  if (NUMBER.test(text)) {
    const digits = text.replace(/[^0-9]/g, '').length;
    if (digits > MAX_DIGITS) {
      throw syntax(`number ${text.slice(0, 40)} has more than ${MAX_DIGITS} digits`);
    }
    return { kind: 'number', value: Number(text), at };
  }
  if (KEYWORDS.has(text)) return { kind: 'keyword', value: text, at };
  if (QID.test(text)) return { kind: 'qid', value: text, at };
  if (KEYWORDS.has(text.toLowerCase())) throw syntax(`write ${text.toLowerCase()} in lower case`);
  throw syntax(`${JSON.stringify(text.slice(0, 40))} is neither a question id nor a number`);
}

class Parser {
  constructor(list) {
    this.tokens = list;
    this.i = 0;
  }

  peek() {
    return this.tokens[this.i];
  }

  take() {
    const token = this.tokens[this.i];
    if (token.kind !== 'end') this.i += 1;
    return token;
  }

  at(kind, value) {
    const token = this.peek();
    return token.kind === kind && (value === undefined || token.value === value);
  }

  unexpected(wanted) {
    const token = this.peek();
    if (token.kind === 'end') return syntax(`ends too early; expected ${wanted}`);
    return syntax(`expected ${wanted} at character ${token.at + 1}`);
  }

  condition(depth) {
    const items = [this.conjunction(depth)];
    while (this.at('keyword', 'or')) {
      this.take();
      items.push(this.conjunction(depth));
    }
    return items.length === 1 ? items[0] : { node: 'any', items };
  }

  conjunction(depth) {
    const items = [this.negation(depth)];
    while (this.at('keyword', 'and')) {
      this.take();
      items.push(this.negation(depth));
    }
    return items.length === 1 ? items[0] : { node: 'all', items };
  }

  negation(depth) {
    if (this.at('keyword', 'not') || this.at('punct', '(')) {
      if (depth >= MAX_DEPTH) {
        throw new ConditionError('too-deep', `nested more than ${MAX_DEPTH} levels deep`);
      }
      if (this.take().value === 'not') return { node: 'not', item: this.negation(depth + 1) };
      const inner = this.condition(depth + 1);
      if (!this.at('punct', ')')) throw this.unexpected("')'");
      this.take();
      return inner;
    }
    return this.comparison();
  }

  operand() {
    const token = this.peek();
    if (token.kind === 'qid') {
      this.take();
      return { ref: token.value };
    }
    if (token.kind === 'text' || token.kind === 'number') {
      this.take();
      return { lit: token.value };
    }
    throw this.unexpected("a question id, a 'text' or a number");
  }

  literal() {
    const token = this.peek();
    if (token.kind === 'text' || token.kind === 'number') {
      this.take();
      return { lit: token.value };
    }
    throw this.unexpected("a 'text' or a number");
  }

  comparison() {
    const left = this.operand();
    if (this.at('op')) {
      const op = this.take().value;
      return { node: 'compare', op, left, right: this.operand() };
    }
    if (this.at('keyword', 'in')) {
      this.take();
      if (this.at('punct', '(')) {
        this.take();
        const literals = [this.literal()];
        while (this.at('punct', ',')) {
          this.take();
          literals.push(this.literal());
        }
        if (!this.at('punct', ')')) throw this.unexpected("',' or ')'");
        this.take();
        return { node: 'oneOf', operand: left, literals };
      }
      if (this.at('qid')) {
        if ('ref' in left) throw syntax(`write an option in quotes before in, not ${left.ref}`);
        return { node: 'selected', literal: left, question: { ref: this.take().value } };
      }
      throw this.unexpected("'(' or a question id after in");
    }
    throw this.unexpected('one of == != < <= > >= or in');
  }
}

// Read a condition: {text, tree, questions}; ConditionError (with its category) if it cannot.
export function parseCondition(text) {
  if (typeof text !== 'string') throw syntax('expected a condition as text');
  // Characters as Python counts them (code points): a UTF-16 length over twice the limit is
  // over it whatever it holds, so the count below is bounded.
  if (text.length > MAX_CONDITION) {
    const count = text.length > 2 * MAX_CONDITION ? text.length : [...text].length;
    if (count > MAX_CONDITION) {
      throw new ConditionError('too-long', `at most ${MAX_CONDITION} characters, got ${count}`);
    }
  }
  const parser = new Parser(tokens(text));
  if (parser.at('end')) throw syntax('empty');
  const tree = parser.condition(0);
  if (!parser.at('end')) throw parser.unexpected('and, or, or the end');
  return { text, tree, questions: [...new Set(refs(tree))] };
}

function refs(node) {
  if (!node) return [];
  if ('ref' in node) return [node.ref];
  if ('lit' in node) return [];
  switch (node.node) {
    case 'compare':
      return [...refs(node.left), ...refs(node.right)];
    case 'oneOf':
      return refs(node.operand);
    case 'selected':
      return [node.question.ref];
    case 'not':
      return refs(node.item);
    default:
      return node.items.flatMap(refs);
  }
}

const MISSING = Symbol('not asked');

function isNumber(value) {
  return typeof value === 'number' && Number.isFinite(value);
}

function valueOf(operand, values) {
  if ('lit' in operand) return operand.lit;
  const found = values instanceof Map ? values.get(operand.ref) : values[operand.ref];
  const own = values instanceof Map ? values.has(operand.ref) : Object.hasOwn(values, operand.ref);
  return own && found !== undefined && found !== null ? found : MISSING;
}

function same(a, b) {
  if (isNumber(a) && isNumber(b)) return a === b;
  if (typeof a === 'string' && typeof b === 'string') return a === b;
  return false;
}

function compare(op, a, b) {
  if (a === MISSING || b === MISSING) return op === '!=';
  if (op === '==') return same(a, b);
  if (op === '!=') return !same(a, b);
  if (!isNumber(a) || !isNumber(b)) return false;
  if (op === '<') return a < b;
  if (op === '<=') return a <= b;
  if (op === '>') return a > b;
  return a >= b;
}

function holds(node, values) {
  switch (node.node) {
    case 'compare':
      return compare(node.op, valueOf(node.left, values), valueOf(node.right, values));
    case 'oneOf': {
      const value = valueOf(node.operand, values);
      return value !== MISSING && node.literals.some((lit) => same(value, lit.lit));
    }
    case 'selected': {
      const label = node.literal.lit;
      const chosen = valueOf(node.question, values);
      if (typeof label !== 'string') return false;
      if (Array.isArray(chosen)) return chosen.includes(label);
      if (chosen instanceof Set) return chosen.has(label);
      return false;
    }
    case 'not':
      return !holds(node.item, values);
    case 'all':
      return node.items.every((item) => holds(item, values));
    default:
      return node.items.some((item) => holds(item, values));
  }
}

// Whether a parsed condition (or its tree) holds for `values`: question id -> value (an object
// or a Map; a question not asked is absent, null or undefined).
export function evaluate(parsed, values) {
  return holds(parsed.tree ?? parsed, values ?? {});
}

// -- checking against a survey (the server checks too; the page may check a draft) ----------

function isPlain(question) {
  return question.epsilon === null || question.epsilon === undefined;
}

function checkLiteral(lit, question) {
  const kind = conditionKind(question);
  if (kind === 'number') {
    if (!isNumber(lit.lit)) throw new ConditionError('type-mismatch', `${question.id} is a number`);
    return;
  }
  if (typeof lit.lit !== 'string') {
    throw new ConditionError('type-mismatch', `${question.id} takes one of its options in quotes`);
  }
  if (!optionsOf(question).includes(lit.lit)) {
    const shown = JSON.stringify(lit.lit);
    throw new ConditionError('not-an-option', `${shown} is not an option of ${question.id}`);
  }
}

function optionsOf(question) {
  return question.options ?? ['no', 'yes'];
}

function setMisuse(question) {
  const id = question.id;
  return new ConditionError('type-mismatch', `${id} is a select-all question: test 'option' in ${id}`);
}

function operandKind(operand, earlier) {
  if ('ref' in operand) return conditionKind(earlier.get(operand.ref));
  return isNumber(operand.lit) ? 'number' : 'text';
}

function checkNode(node, earlier) {
  switch (node.node) {
    case 'not':
      checkNode(node.item, earlier);
      return;
    case 'all':
    case 'any':
      node.items.forEach((item) => checkNode(item, earlier));
      return;
    case 'oneOf': {
      if (!('ref' in node.operand)) {
        throw new ConditionError('constant', 'tests a constant with in (...)');
      }
      const question = earlier.get(node.operand.ref);
      if (conditionKind(question) === 'set') throw setMisuse(question);
      node.literals.forEach((lit) => checkLiteral(lit, question));
      return;
    }
    case 'selected': {
      const question = earlier.get(node.question.ref);
      if (conditionKind(question) !== 'set') {
        const why = `'...' in ${question.id} tests a select-all question`;
        throw new ConditionError('type-mismatch', why);
      }
      checkLiteral(node.literal, question);
      return;
    }
    default: {
      const { left, right, op } = node;
      if ('lit' in left && 'lit' in right) {
        throw new ConditionError('constant', 'compares two constants');
      }
      for (const side of [left, right]) {
        const question = 'ref' in side ? earlier.get(side.ref) : null;
        if (question && conditionKind(question) === 'set') throw setMisuse(question);
      }
      const kinds = [operandKind(left, earlier), operandKind(right, earlier)];
      if (op !== '==' && op !== '!=' && (kinds[0] !== 'number' || kinds[1] !== 'number')) {
        throw new ConditionError('type-mismatch', `${op} orders numbers only`);
      }
      if ('ref' in left && 'ref' in right) {
        if (kinds[0] !== kinds[1]) {
          const why = `compares ${left.ref} with ${right.ref}, values of different kinds`;
          throw new ConditionError('type-mismatch', why);
        }
        return;
      }
      const [ref, lit] = 'ref' in left ? [left, right] : [right, left];
      checkLiteral(lit, earlier.get(ref.ref));
    }
  }
}

// Refuse a parsed condition on question `qid` of a survey (its JSON document) that names a
// question not asked before it, a randomized one, an option its question lacks, or compares
// values of different kinds: ConditionError with the same category as Python's.
export function checkCondition(parsed, survey, qid) {
  const questions = survey.questions;
  const position = questions.findIndex((q) => q.id === qid);
  const before = questions.slice(0, position < 0 ? questions.length : position);
  const earlier = new Map(before.map((q) => [q.id, q]));
  const later = new Set(position < 0 ? [] : questions.slice(position).map((q) => q.id));
  for (const ref of refs(parsed.tree)) {
    if (later.has(ref)) throw new ConditionError('later-question', `names ${ref}, not asked before this question`);
    const question = earlier.get(ref);
    if (!question) throw new ConditionError('unknown-question', `names ${ref}: no such question`);
    if (!isPlain(question)) {
      throw new ConditionError('randomized-question', `names ${ref}, a randomized question`);
    }
    if (conditionKind(question) === null) throw new ConditionError('type-mismatch', `${ref} cannot be tested`);
  }
  checkNode(parsed.tree, earlier);
}

// -- the questions asked ---------------------------------------------------------------------

const parsedBySurvey = new WeakMap();

function conditionsOf(survey) {
  let found = parsedBySurvey.get(survey);
  if (!found) {
    found = new Map();
    for (const question of survey.questions) {
      if (typeof question.relevant === 'string') found.set(question.id, parseCondition(question.relevant));
    }
    parsedBySurvey.set(survey, found);
  }
  return found;
}

function indexOf(question, given) {
  const options = optionsOf(question);
  if (typeof given === 'number' && Number.isInteger(given) && given >= 0 && given < options.length) return given;
  if (typeof given === 'boolean' && options.length === 2) return given ? 1 : 0;
  if (typeof given === 'string') {
    const at = options.indexOf(given);
    if (at >= 0) return at;
    if (/^[0-9]{1,4}$/.test(given) && Number(given) < options.length) return Number(given);
  }
  return null;
}

// A plain answer as a condition sees it: a label, a number, or the selected labels; null when
// there is none (not answered, or not an answer).
function conditionValue(question, given) {
  if (given === undefined || given === null) return null;
  const kind = conditionKind(question);
  if (kind === 'number') {
    const number = typeof given === 'string' && given.trim() !== '' ? Number(given) : given;
    return isNumber(number) ? number : null;
  }
  const options = optionsOf(question);
  if (kind === 'set') {
    let items;
    if (typeof given === 'string' && /^[01]+$/.test(given) && given.length === options.length) {
      items = [...given].flatMap((bit, i) => (bit === '1' ? [i] : []));
    } else if (Array.isArray(given) || given instanceof Set) {
      items = [...given];
    } else {
      return null;
    }
    const indices = items.map((item) => indexOf(question, item));
    return indices.includes(null) ? null : indices.map((i) => options[i]);
  }
  if (kind === 'label') {
    const at = indexOf(question, given);
    return at === null ? null : options[at];
  }
  return null;
}

// The ids of the questions a respondent is asked, in order, given their plain answers:
// question id -> the answer as the page holds it (an option index or label, a number, a
// multi question's selected indices or labels or its bit string). Questions not asked are
// skipped, whatever their inputs hold. Survey.relevant in Python is the same rule.
export function relevantQuestions(survey, plainValues) {
  const conditions = conditionsOf(survey);
  const given = plainValues instanceof Map ? Object.fromEntries(plainValues) : (plainValues ?? {});
  const values = {};
  const asked = [];
  for (const question of survey.questions) {
    const condition = conditions.get(question.id);
    if (condition && !evaluate(condition, values)) continue;
    asked.push(question.id);
    if (isPlain(question) && Object.hasOwn(given, question.id)) {
      const value = conditionValue(question, given[question.id]);
      if (value !== null) values[question.id] = value;
    }
  }
  return asked;
}
