#include "server/chat/jinja_parser.h"

#include <set>

#include "server/chat/jinja_template.h"

namespace tessera::jinja {
namespace {

[[noreturn]] void fail(int line, const std::string& what) {
  throw TemplateError("template line " + std::to_string(line) + ": " + what);
}

ExprPtr make(Expr::Kind kind, int line, std::string name = {}) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  e->name = std::move(name);
  return e;
}

// Recursive descent over one tag's tokens, with jinja2's precedence.
class ExprParser {
 public:
  ExprParser(std::vector<Token> tokens, int max_depth) : t_(std::move(tokens)), max_depth_(max_depth) {}

  ExprPtr expression() {
    Guard g(this);
    ExprPtr e = or_expr();
    if (is_name("if")) {
      ++i_;
      auto c = make(Expr::Kind::kCondition, e->line);
      ExprPtr cond = or_expr();
      ExprPtr other;
      if (is_name("else")) {
        ++i_;
        other = expression();
      }
      c->children.push_back(std::move(e));
      c->children.push_back(std::move(cond));
      c->children.push_back(std::move(other));
      return c;
    }
    return e;
  }

  // `a, b` without brackets, as `set` and `for` targets or values allow.
  ExprPtr expression_or_tuple() {
    ExprPtr first = expression();
    if (!is_op(",")) return first;
    auto tuple = make(Expr::Kind::kTuple, first->line);
    tuple->children.push_back(std::move(first));
    while (is_op(",")) {
      ++i_;
      if (at_end()) break;
      tuple->children.push_back(expression());
    }
    return tuple;
  }

  const Token& peek() const { return t_[i_]; }
  bool at_end() const { return t_[i_].kind == Token::Kind::kEnd; }
  bool is_name(const char* n) const { return t_[i_].kind == Token::Kind::kName && t_[i_].text == n; }
  bool is_op(const char* o) const { return t_[i_].kind == Token::Kind::kOperator && t_[i_].text == o; }
  void expect_op(const char* o) {
    if (!is_op(o)) fail(peek().line, std::string("expected '") + o + "'" + near());
    ++i_;
  }
  std::string expect_name() {
    if (peek().kind != Token::Kind::kName) fail(peek().line, "expected a name" + near());
    return t_[i_++].text;
  }
  void expect_end() {
    if (!at_end()) fail(peek().line, "unexpected '" + peek().text + "'");
  }
  std::string near() const { return at_end() ? " at the end of the tag" : " near '" + peek().text + "'"; }

 private:
  struct Guard {
    explicit Guard(ExprParser* p) : p(p) {
      if (++p->depth_ > p->max_depth_) fail(p->peek().line, "expression nested too deeply");
    }
    ~Guard() { --p->depth_; }
    ExprParser* p;
  };

  ExprPtr binary(ExprPtr lhs, std::string op, ExprPtr rhs) {
    auto b = make(Expr::Kind::kBinary, lhs->line, std::move(op));
    b->children.push_back(std::move(lhs));
    b->children.push_back(std::move(rhs));
    return b;
  }

  ExprPtr or_expr() {
    ExprPtr e = and_expr();
    while (is_name("or")) {
      ++i_;
      e = binary(std::move(e), "or", and_expr());
    }
    return e;
  }

  ExprPtr and_expr() {
    ExprPtr e = not_expr();
    while (is_name("and")) {
      ++i_;
      e = binary(std::move(e), "and", not_expr());
    }
    return e;
  }

  ExprPtr not_expr() {
    if (is_name("not")) {
      Guard g(this);
      auto u = make(Expr::Kind::kUnary, peek().line, "not");
      ++i_;
      u->children.push_back(not_expr());
      return u;
    }
    return compare();
  }

  ExprPtr compare() {
    static const std::set<std::string> kOps = {"==", "!=", "<", "<=", ">", ">="};
    ExprPtr e = additive();
    while (true) {
      if (peek().kind == Token::Kind::kOperator && kOps.count(peek().text)) {
        std::string op = t_[i_++].text;
        e = binary(std::move(e), op, additive());
      } else if (is_name("in")) {
        ++i_;
        e = binary(std::move(e), "in", additive());
      } else if (is_name("not") && t_[i_ + 1].kind == Token::Kind::kName && t_[i_ + 1].text == "in") {
        i_ += 2;
        e = binary(std::move(e), "in", additive());
        e->negated = true;
      } else {
        return e;
      }
    }
  }

  ExprPtr additive() {
    ExprPtr e = concat();
    while (is_op("+") || is_op("-")) {
      std::string op = t_[i_++].text;
      e = binary(std::move(e), op, concat());
    }
    return e;
  }

  ExprPtr concat() {
    ExprPtr e = multiplicative();
    while (is_op("~")) {
      ++i_;
      e = binary(std::move(e), "~", multiplicative());
    }
    return e;
  }

  ExprPtr multiplicative() {
    ExprPtr e = power();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = t_[i_++].text;
      e = binary(std::move(e), op, power());
    }
    return e;
  }

  ExprPtr power() {
    ExprPtr e = unary(true);
    while (is_op("**")) {
      ++i_;
      e = binary(std::move(e), "**", unary(true));
    }
    return e;
  }

  ExprPtr unary(bool with_filters) {
    Guard g(this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      e = make(Expr::Kind::kUnary, peek().line, t_[i_++].text);
      e->children.push_back(unary(false));
    } else {
      e = postfix(primary());
    }
    return with_filters ? filters_and_tests(std::move(e)) : std::move(e);
  }

  void call_arguments(Expr* call) {
    expect_op("(");
    while (!is_op(")")) {
      if (peek().kind == Token::Kind::kName && t_[i_ + 1].kind == Token::Kind::kOperator && t_[i_ + 1].text == "=") {
        std::string key = t_[i_].text;
        i_ += 2;
        call->keywords.emplace_back(std::move(key), expression());
      } else {
        if (!call->keywords.empty()) fail(peek().line, "positional argument after a keyword argument");
        call->children.push_back(expression());
      }
      if (!is_op(",")) break;
      ++i_;
    }
    expect_op(")");
  }

  ExprPtr filters_and_tests(ExprPtr e) {
    while (true) {
      if (is_op("|")) {
        ++i_;
        auto f = make(Expr::Kind::kFilter, peek().line, expect_name());
        f->children.push_back(std::move(e));
        if (is_op("(")) call_arguments(f.get());
        e = std::move(f);
      } else if (is_name("is")) {
        ++i_;
        auto t = make(Expr::Kind::kTest, peek().line);
        if (is_name("not")) {
          t->negated = true;
          ++i_;
        }
        t->name = expect_name();
        t->children.push_back(std::move(e));
        if (is_op("(")) {
          call_arguments(t.get());
        } else if (starts_bare_argument()) {
          t->children.push_back(postfix(primary()));
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }

  bool starts_bare_argument() const {
    static const std::set<std::string> kStop = {"and", "or", "else", "if", "in", "not", "is"};
    const Token& t = peek();
    if (t.kind == Token::Kind::kName) return !kStop.count(t.text);
    return t.kind == Token::Kind::kString || t.kind == Token::Kind::kInteger || t.kind == Token::Kind::kFloat ||
           (t.kind == Token::Kind::kOperator && (t.text == "[" || t.text == "{"));
  }

  ExprPtr postfix(ExprPtr e) {
    while (true) {
      if (is_op(".")) {
        ++i_;
        auto a = make(Expr::Kind::kAttribute, peek().line);
        if (peek().kind == Token::Kind::kInteger) {
          a->kind = Expr::Kind::kIndex;
          a->children.push_back(std::move(e));
          auto idx = make(Expr::Kind::kLiteral, peek().line);
          idx->value = Value::integer(t_[i_++].integer);
          a->children.push_back(std::move(idx));
        } else {
          a->name = expect_name();
          a->children.push_back(std::move(e));
        }
        e = std::move(a);
      } else if (is_op("[")) {
        e = subscript(std::move(e));
      } else if (is_op("(")) {
        auto c = make(Expr::Kind::kCall, peek().line);
        c->children.push_back(std::move(e));
        call_arguments(c.get());
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  ExprPtr subscript(ExprPtr e) {
    const int line = peek().line;
    expect_op("[");
    ExprPtr parts[3];
    int colons = 0;
    if (!is_op(":")) parts[0] = expression();
    while (is_op(":") && colons < 2) {
      ++i_;
      ++colons;
      if (!is_op(":") && !is_op("]")) parts[colons] = expression();
    }
    expect_op("]");
    auto s = make(colons ? Expr::Kind::kSlice : Expr::Kind::kIndex, line);
    s->children.push_back(std::move(e));
    if (!colons) {
      if (!parts[0]) fail(line, "empty subscript");
      s->children.push_back(std::move(parts[0]));
    } else {
      for (auto& p : parts) s->children.push_back(std::move(p));
    }
    return s;
  }

  ExprPtr primary() {
    Guard g(this);
    const Token& t = peek();
    auto lit = make(Expr::Kind::kLiteral, t.line);
    switch (t.kind) {
      case Token::Kind::kString: {
        std::string s;
        while (peek().kind == Token::Kind::kString) s += t_[i_++].text;  // adjacent literals join
        lit->value = Value::string(std::move(s));
        return lit;
      }
      case Token::Kind::kInteger: lit->value = Value::integer(t.integer); ++i_; return lit;
      case Token::Kind::kFloat: lit->value = Value::number(t.number); ++i_; return lit;
      case Token::Kind::kName: return name_or_constant();
      case Token::Kind::kOperator:
        if (t.text == "(") return parenthesised();
        if (t.text == "[") return sequence(Expr::Kind::kList, "]");
        if (t.text == "{") return dict_literal();
        break;
      case Token::Kind::kEnd: break;
    }
    fail(t.line, "expected an expression" + near());
  }

  ExprPtr name_or_constant() {
    const Token& t = t_[i_++];
    auto lit = make(Expr::Kind::kLiteral, t.line);
    if (t.text == "true" || t.text == "True") {
      lit->value = Value::boolean(true);
    } else if (t.text == "false" || t.text == "False") {
      lit->value = Value::boolean(false);
    } else if (t.text == "none" || t.text == "None") {
      lit->value = Value::none();
    } else {
      return make(Expr::Kind::kName, t.line, t.text);
    }
    return lit;
  }

  ExprPtr parenthesised() {
    const int line = peek().line;
    ++i_;
    if (is_op(")")) {
      ++i_;
      return make(Expr::Kind::kTuple, line);
    }
    ExprPtr first = expression();
    if (is_op(")")) {
      ++i_;
      return first;
    }
    auto tuple = make(Expr::Kind::kTuple, line);
    tuple->children.push_back(std::move(first));
    while (is_op(",")) {
      ++i_;
      if (is_op(")")) break;
      tuple->children.push_back(expression());
    }
    expect_op(")");
    return tuple;
  }

  ExprPtr sequence(Expr::Kind kind, const char* close) {
    auto s = make(kind, peek().line);
    ++i_;
    while (!is_op(close)) {
      s->children.push_back(expression());
      if (!is_op(",")) break;
      ++i_;
    }
    expect_op(close);
    return s;
  }

  ExprPtr dict_literal() {
    auto d = make(Expr::Kind::kDict, peek().line);
    ++i_;
    while (!is_op("}")) {
      d->children.push_back(expression());
      expect_op(":");
      d->children.push_back(expression());
      if (!is_op(",")) break;
      ++i_;
    }
    expect_op("}");
    return d;
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;
  int max_depth_;
};

// Statements: a block parser over the pieces, stopping at the tags that end
// the block being parsed.
class BlockParser {
 public:
  BlockParser(const std::vector<Piece>& pieces, int max_depth) : pieces_(pieces), max_depth_(max_depth) {}

  Body parse_all() {
    std::string stop;
    Body body = block({}, &stop);
    if (!stop.empty()) fail(current_line_, "unexpected '" + stop + "'");
    return body;
  }

 private:
  // Parses until one of `enders` (returned in *stopped_at with its parser
  // positioned after the keyword) or the end of the template.
  Body block(const std::set<std::string>& enders, std::string* stopped_at) {
    if (++depth_ > max_depth_) fail(current_line_, "blocks nested too deeply");
    Body body;
    while (next_ < pieces_.size()) {
      const Piece& p = pieces_[next_++];
      current_line_ = p.line;
      if (p.kind == Piece::Kind::kText) {
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::kText;
        n->line = p.line;
        n->text = p.text;
        body.push_back(std::move(n));
        continue;
      }
      auto parser = std::make_unique<ExprParser>(tokenize_expression(p.text, p.line), max_depth_);
      if (p.kind == Piece::Kind::kOutput) {
        auto n = std::make_unique<Node>();
        n->kind = Node::Kind::kOutput;
        n->line = p.line;
        n->expr = parser->expression();
        parser->expect_end();
        body.push_back(std::move(n));
        continue;
      }
      const std::string keyword = parser->expect_name();
      if (enders.count(keyword)) {
        *stopped_at = keyword;
        tag_ = std::move(parser);
        --depth_;
        return body;
      }
      body.push_back(statement(keyword, *parser, p.line));
    }
    --depth_;
    stopped_at->clear();
    return body;
  }

  std::unique_ptr<Node> statement(const std::string& keyword, ExprParser& tag, int line) {
    auto n = std::make_unique<Node>();
    n->line = line;
    if (keyword == "if") {
      n->kind = Node::Kind::kIf;
      ExprPtr cond = tag.expression();
      tag.expect_end();
      std::string stop;
      while (true) {
        Body body = block({"elif", "else", "endif"}, &stop);
        n->branches.emplace_back(std::move(cond), std::move(body));
        if (stop == "elif") {
          cond = tag_->expression();
          tag_->expect_end();
        } else if (stop == "else") {
          tag_->expect_end();
          n->branches.emplace_back(nullptr, block({"endif"}, &stop));
          if (stop != "endif") fail(line, "'if' without 'endif'");
          tag_->expect_end();
          break;
        } else if (stop == "endif") {
          tag_->expect_end();
          break;
        } else {
          fail(line, "'if' without 'endif'");
        }
      }
    } else if (keyword == "for") {
      n->kind = Node::Kind::kFor;
      n->targets.push_back(tag.expect_name());
      while (tag.is_op(",")) {
        tag.expect_op(",");
        n->targets.push_back(tag.expect_name());
      }
      if (!tag.is_name("in")) fail(line, "expected 'in' in 'for'");
      tag.expect_name();
      n->expr = tag.expression_or_tuple();
      if (n->expr->kind == Expr::Kind::kCondition && !n->expr->children[2]) {
        // `for x in xs if cond`: the filter parsed as a conditional expression.
        n->filter = std::move(n->expr->children[1]);
        n->expr = std::move(n->expr->children[0]);
      }
      if (tag.is_name("recursive")) fail(line, "recursive loops are not supported");
      tag.expect_end();
      std::string stop;
      n->body = block({"else", "endfor"}, &stop);
      if (stop == "else") {
        tag_->expect_end();
        n->else_body = block({"endfor"}, &stop);
      }
      if (stop != "endfor") fail(line, "'for' without 'endfor'");
      tag_->expect_end();
    } else if (keyword == "set") {
      n->kind = Node::Kind::kSet;
      n->targets.push_back(tag.expect_name());
      if (tag.is_op(".")) {
        tag.expect_op(".");
        n->target_attribute = tag.expect_name();
      } else {
        while (tag.is_op(",")) {
          tag.expect_op(",");
          n->targets.push_back(tag.expect_name());
        }
      }
      if (!tag.is_op("=")) fail(line, "block 'set' is not supported; use 'set name = value'");
      tag.expect_op("=");
      n->expr = tag.expression_or_tuple();
      tag.expect_end();
    } else if (keyword == "macro") {
      n->kind = Node::Kind::kMacro;
      n->targets.push_back(tag.expect_name());
      tag.expect_op("(");
      while (!tag.is_op(")")) {
        if (!n->params.empty()) tag.expect_op(",");
        std::string param = tag.expect_name();
        ExprPtr fallback;
        if (tag.is_op("=")) {
          tag.expect_op("=");
          fallback = tag.expression();
        }
        n->params.emplace_back(std::move(param), std::move(fallback));
      }
      tag.expect_op(")");
      tag.expect_end();
      std::string stop;
      n->body = block({"endmacro"}, &stop);
      if (stop != "endmacro") fail(line, "'macro' without 'endmacro'");
      tag_->expect_end();
    } else if (keyword == "break" || keyword == "continue") {
      n->kind = keyword == "break" ? Node::Kind::kBreak : Node::Kind::kContinue;
      tag.expect_end();
    } else {
      fail(line, "unsupported or unexpected tag '" + keyword + "'");
    }
    return n;
  }

  const std::vector<Piece>& pieces_;
  size_t next_ = 0;
  int depth_ = 0;
  int max_depth_;
  int current_line_ = 1;
  std::unique_ptr<ExprParser> tag_;  // the tag that ended the last block
};

}  // namespace

Body parse_pieces(const std::vector<Piece>& pieces, int max_depth) { return BlockParser(pieces, max_depth).parse_all(); }

}  // namespace tessera::jinja
