import Foundation

/// One command of `rdefaults`, as every piece of help (the overview, `help COMMAND`, usage hints, the README's and
/// the documentation's tables, the shell completions) shows it: all of them are made from ``Help/commands``, so
/// they cannot disagree.
struct CommandSpec: Sendable {
  /// What a positional argument is, for the shell completions.
  enum Argument: Sendable {
    case domain
    case file
    case other
  }

  var name: String
  /// The arguments after the command's name, as the synopsis shows them.
  var arguments: String
  /// One line, for the overview and the tables.
  var summary: String
  /// The help page's text under the synopsis.
  var details: String
  /// The positional arguments in order, for the completions.
  var completes: [Argument] = []
  /// The options (besides `-h`/`--help`), for the completions.
  var options: [String] = []

  var synopsis: String { "rdefaults \(name)" + (arguments.isEmpty ? "" : " " + arguments) }

  /// Whether `--file PATH` may stand for the DOMAIN (every command whose first argument is one).
  var takesFile: Bool { completes.first == .domain }

  /// The options the completions offer: the command's own, and `--file` where it takes one.
  var allOptions: [String] { (takesFile ? ["--file"] : []) + options }

  var helpPage: String {
    "Usage: \(synopsis)\n\n\(details)"
      + (takesFile
        ? "\n\n--file PATH in DOMAIN's place: the property-list file at PATH instead of a domain (a file store, as"
          + "\nDefaultsStore(fileURL:) makes; created by its first write)." : "")
  }
}

/// A value type of `rdefaults write`.
struct TypeFlag: Sendable {
  var flag: String
  var aliases: [String] = []
  var meaning: String
}

enum Help {
  /// The value types of `write`, in the order the synopsis lists them.
  static let typeFlags: [TypeFlag] = [
    TypeFlag(flag: "-string", meaning: "a string (the default)"),
    TypeFlag(flag: "-int", aliases: ["-integer"], meaning: "a 64-bit integer"),
    TypeFlag(flag: "-float", aliases: ["-double", "-real"], meaning: "a floating-point number"),
    TypeFlag(flag: "-bool", aliases: ["-boolean"], meaning: "YES, NO, true, false, 1 or 0"),
    TypeFlag(flag: "-date", meaning: "an ISO 8601 date, such as 2025-01-31T12:00:00Z"),
    TypeFlag(flag: "-data", meaning: "hex digits"),
    TypeFlag(flag: "-url", meaning: "an absolute URL or path, stored as Foundation reads URLs"),
    TypeFlag(flag: "-array", meaning: "the VALUEs that follow, as strings"),
    TypeFlag(flag: "-dict", meaning: "KEY VALUE pairs that follow, with string values"),
  ]

  /// Every spelling of every type flag.
  static var allTypeFlags: [String] { typeFlags.flatMap { [$0.flag] + $0.aliases } }

  /// The commands, in the order the overview lists them.
  static let commands: [CommandSpec] = [
    CommandSpec(
      name: "domains", arguments: "", summary: "List the domains.",
      details: """
        Lists the domains (plist files) in the preferences folder, one per line. Files whose names cannot be
        domain names are listed on standard error, escaped, with how to rename them.
        """),
    CommandSpec(
      name: "read", arguments: "[DOMAIN [KEY]]", summary: "Print every domain, one domain, or one value.",
      details: """
        With a KEY, prints its value plainly (hello, 42, 1 for true, a URL as the URL). With a DOMAIN only,
        prints the domain as a plist-style listing. With nothing, prints every domain. Control characters in
        keys and values are escaped (\\n, \\e, \\U0085, ...). A missing domain or key is a failure (exit 1).
        """, completes: [.domain, .other]),
    CommandSpec(
      name: "read-type", arguments: "DOMAIN KEY", summary: "Print the type of a value.",
      details: """
        Prints 'Type is TYPE', where TYPE is one of string, integer, float, boolean, date, data, url, array
        and dictionary. A missing domain or key is a failure (exit 1).
        """, completes: [.domain, .other]),
    CommandSpec(
      name: "write",
      arguments: "DOMAIN KEY [" + typeFlags.map(\.flag).joined(separator: "|") + "] VALUE...",
      summary: "Write a value (a string unless a type is given).",
      details: "Types:\n"
        + typeFlags.map { type in
          "  " + ([type.flag] + type.aliases).joined(separator: ", ") + ": " + type.meaning
        }.joined(separator: "\n") + "\n\n"
          + """
          A VALUE that starts with '-' follows '--': rdefaults write DOMAIN KEY -- -value. Observers of the key,
          in any process using ReactiveDefaults, are told.
          """, completes: [.domain, .other, .other]),
    CommandSpec(
      name: "rename", arguments: "DOMAIN OLD NEW", summary: "Rename a key, keeping its value.",
      details: """
        Moves the value of OLD to NEW (replacing any value NEW had) and removes OLD, in one atomic edit of the
        domain. A missing domain or key is a failure (exit 1).
        """, completes: [.domain, .other, .other]),
    CommandSpec(
      name: "delete", arguments: "DOMAIN [KEY]", summary: "Remove a key, or a whole domain.",
      details: """
        Removes a key, or with no KEY the whole domain and its file. A missing domain or key is a failure
        (exit 1).
        """, completes: [.domain, .other]),
    CommandSpec(
      name: "find", arguments: "WORD",
      summary: "Print every key whose domain, name or value contains WORD.",
      details: """
        Searches every domain's keys and values (strings, numbers, URLs, and inside arrays and dictionaries)
        for WORD, ignoring case, and prints the matching keys of each domain as a listing.
        """),
    CommandSpec(
      name: "watch", arguments: "DOMAIN [KEY...] [--json]", summary: "Print a line per change until interrupted.",
      details: """
        Prints a line per change, 'KEY = VALUE' (or 'KEY removed'), until interrupted (Ctrl-C). With KEYs, only
        those keys; with --json, one JSON object per line: {"key": "...", "value": ...} (null when removed).
        Changes made by other processes arrive as soon as they are saved.
        """, completes: [.domain, .other], options: ["--json"]),
    CommandSpec(
      name: "export", arguments: "DOMAIN FILE", summary: "Save a domain as an XML plist ('-': standard output).",
      details: "Writes the domain as an XML property list to FILE, or to standard output for '-'.",
      completes: [.domain, .file]),
    CommandSpec(
      name: "import", arguments: "DOMAIN FILE", summary: "Merge a plist's keys into a domain ('-': standard input).",
      details: """
        Reads a property list whose root is a dictionary from FILE ('-' for standard input) and writes all of
        its keys into the domain in one atomic save (other keys are kept): all keys or none.
        """, completes: [.domain, .file]),
    CommandSpec(
      name: "demo", arguments: "", summary: "A short tour of the library, in a scratch domain.",
      details: """
        A self-contained tour: a property's current value and changes, two bound properties, and a change made
        by a child process arriving through the file watcher. Uses a scratch domain, removed at the end.
        """),
    CommandSpec(
      name: "help", arguments: "[COMMAND]", summary: "Print this overview, or the help of one command.",
      details: "Prints the overview, or the help of one command (as 'rdefaults COMMAND --help' does)."),
  ]

  static func command(named name: String) -> CommandSpec? {
    commands.first { $0.name == name }
  }

  /// The synopsis of a command, for usage hints.
  static func synopsis(of name: String) -> String {
    command(named: name)?.synopsis ?? "rdefaults help"
  }

  static var overview: String {
    let width = commands.map { $0.name.count + 1 + shortArguments($0).count }.max() ?? 0
    let lines = commands.map { command -> String in
      let left = command.name + (command.arguments.isEmpty ? "" : " " + shortArguments(command))
      return "  " + left.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + command.summary
    }
    return """
      rdefaults: read, write and watch the UserDefaults domains Foundation keeps as plist files
      (in $XDG_CONFIG_HOME, else ~/.config).

      Usage: rdefaults COMMAND [ARGUMENTS]

      Commands:
      \(lines.joined(separator: "\n"))

      Options: -h, --help (also 'rdefaults help COMMAND' and 'rdefaults COMMAND --help'), --version,
      --generate-completion-script bash|zsh|fish. '--' ends the options: what follows is taken as written.
      --file PATH in a DOMAIN's place: a property-list file at any path (rdefaults read --file a.plist).
      Exit status: 0 success, 64 usage error, 1 failure.
      """
  }

  /// The overview shortens `write`'s list of types, which its own help spells out.
  private static func shortArguments(_ command: CommandSpec) -> String {
    command.name == "write" ? "DOMAIN KEY [-TYPE] VALUE..." : command.arguments
  }

  /// The command table as Markdown rows, as the README and the documentation show it.
  static var markdownRows: [String] {
    commands.map { command in
      "| `" + command.synopsis.replacingOccurrences(of: "|", with: "\\|") + "` | " + command.summary + " |"
    }
  }
}
