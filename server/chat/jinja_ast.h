#pragma once
// The parsed form of a template: expressions and statements. Built by the
// parser, walked by the renderer; nothing here runs code of its own.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/chat/jinja_value.h"

namespace tessera::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind : uint8_t {
    kLiteral,    // value
    kName,       // name
    kList,       // children
    kTuple,      // children
    kDict,       // children: key, value, key, value, ...
    kAttribute,  // children[0].name
    kIndex,      // children[0][children[1]]
    kSlice,      // children[0][children[1]:children[2]:children[3]], null parts allowed
    kCall,       // children[0](children[1..], keywords)
    kFilter,     // children[0] | name(children[1..], keywords)
    kTest,       // children[0] is [not] name(children[1..])
    kUnary,      // name in {"not", "-", "+"}, children[0]
    kBinary,     // children[0] name children[1]; name is the operator
    kCondition,  // children[0] if children[1] else children[2] (may be null)
  };

  Kind kind = Kind::kLiteral;
  int line = 1;
  Value value;
  std::string name;
  bool negated = false;  // `is not`, `not in`
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
};

struct Node;
using Body = std::vector<std::unique_ptr<Node>>;

struct Node {
  enum class Kind : uint8_t { kText, kOutput, kIf, kFor, kSet, kBreak, kContinue, kMacro };

  Kind kind = Kind::kText;
  int line = 1;
  std::string text;                              // kText
  ExprPtr expr;                                  // kOutput, kSet (value), kFor (iterable)
  std::vector<std::pair<ExprPtr, Body>> branches;  // kIf: condition (null for else) and body
  std::vector<std::string> targets;              // kFor loop variables; kSet names
  std::string target_attribute;                  // kSet of `ns.attr`: targets[0] is ns
  ExprPtr filter;                                // kFor `if` clause
  Body body;                                     // kFor, kMacro
  Body else_body;                                // kFor `else`
  std::vector<std::pair<std::string, ExprPtr>> params;  // kMacro (name in targets[0]): names and defaults (or null)
};

}  // namespace tessera::jinja
