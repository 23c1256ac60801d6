/// The words of a command line after the command's name: the options the command knows and its positional
/// arguments. `--` ends the options; a word that looks like an option and is not one is a usage error naming it.
struct Words {
  var positional: [String] = []
  var options: Set<String> = []
  let command: String

  init(_ arguments: [String], command: String, options known: Set<String> = []) throws {
    self.command = command
    var literal = false
    for word in arguments {
      if literal {
        positional.append(word)
      } else if word == "--" {
        literal = true
      } else if Self.looksLikeOption(word) {
        guard known.contains(word) else {
          throw RDefaults.usage(
            "unknown option '\(Formatting.escaped(word))'; put '--' before an argument that starts with '-'.",
            command: command)
        }
        options.insert(word)
      } else {
        positional.append(word)
      }
    }
  }

  /// A word that starts with `-` and is not a negative number.
  static func looksLikeOption(_ word: String) -> Bool {
    word.count > 1 && word.hasPrefix("-") && Double(word) == nil
  }

  /// Fails with a usage error naming the first extra argument, or saying what is missing.
  func expect(_ counts: ClosedRange<Int>, _ what: String) throws {
    if positional.count > counts.upperBound {
      throw RDefaults.usage(
        "\(what): unexpected \(Formatting.argument(positional[counts.upperBound])).", command: command)
    }
    if positional.count < counts.lowerBound { throw RDefaults.usage("\(what).", command: command) }
  }
}
