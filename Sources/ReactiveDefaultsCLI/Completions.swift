import Foundation

/// The shell completion scripts of `rdefaults --generate-completion-script SHELL`, made from the command table
/// (``Help/commands``): commands, the `write` types, options, domain names (asked of `rdefaults domains` at
/// completion time) and file names.
enum Completions {
  static func script(for shell: String) -> String? {
    switch shell {
    case "bash": bash
    case "zsh": zsh
    case "fish": fish
    default: nil
    }
  }

  private static var commandNames: String { Help.commands.map(\.name).joined(separator: " ") }
  private static var globalOptions: String { "-h --help --version --generate-completion-script" }
  private static var typeFlags: String { Help.allTypeFlags.joined(separator: " ") }

  /// For each command, the kind of its positional arguments, as `name:position:kind` cases.
  private static func positions(_ kind: CommandSpec.Argument) -> [String] {
    Help.commands.flatMap { command in
      command.completes.enumerated().filter { $0.element == kind }.map { "\(command.name):\($0.offset + 1)" }
    }
  }

  /// The shell `case` patterns of the positions that complete a domain, and of those that complete a file.
  private static var argumentCases: (domain: String, file: String) {
    (positions(.domain).joined(separator: "|"), positions(.file).joined(separator: "|"))
  }

  /// One `case` line per command that has options, made by `line` from the command's name and its options.
  private static func optionCases(_ line: (_ name: String, _ options: String) -> String) -> String {
    Help.commands.filter { !$0.allOptions.isEmpty }.map { line($0.name, $0.allOptions.joined(separator: " ")) }
      .joined(separator: "\n")
  }

  static var bash: String {
    let (domainCases, fileCases) = argumentCases
    let optionLines = optionCases { "    \($0)) options=\"-h --help \($1)\" ;;" }
    return """
      # bash completion for rdefaults: source it, or save it as
      # ~/.local/share/bash-completion/completions/rdefaults
      _rdefaults() {
        local current=${COMP_WORDS[COMP_CWORD]}
        local tool=${COMP_WORDS[0]}
        COMPREPLY=()
        if [[ $COMP_CWORD -eq 1 ]]; then
          COMPREPLY=($(compgen -W "\(commandNames) \(globalOptions)" -- "$current"))
          return 0
        fi
        local command=${COMP_WORDS[1]}
        local position=$((COMP_CWORD - 1))
        case "$command" in
          help) [[ $position -eq 1 ]] && COMPREPLY=($(compgen -W "\(commandNames)" -- "$current")); return 0 ;;
          --generate-completion-script)
            [[ $position -eq 1 ]] && COMPREPLY=($(compgen -W "bash zsh fish" -- "$current")); return 0 ;;
        esac
        local options="-h --help"
        case "$command" in
      \(optionLines)
        esac
        if [[ ${COMP_WORDS[COMP_CWORD-1]} == --file ]]; then
          local IFS=$'\\n'
          COMPREPLY=($(compgen -f -- "$current"))
          return 0
        fi
        if [[ $current == -* ]]; then
          if [[ $command == write && $position -eq 3 ]]; then
            COMPREPLY=($(compgen -W "\(typeFlags)" -- "$current"))
          else
            COMPREPLY=($(compgen -W "$options" -- "$current"))
          fi
          return 0
        fi
        case "$command:$position" in
          \(domainCases.isEmpty ? "none" : domainCases))
            # Names are matched and offered as they are, quoted for the command line: never expanded or run
            # (compgen -W would expand a domain named $(…)).
            local name
            while IFS= read -r name; do
              [[ $name == "$current"* ]] && COMPREPLY+=("$(printf '%q' "$name")")
            done < <("$tool" domains 2>/dev/null) ;;
          \(fileCases.isEmpty ? "none" : fileCases))
            local IFS=$'\\n'
            COMPREPLY=($(compgen -f -- "$current")) ;;
        esac
        return 0
      }
      complete -F _rdefaults rdefaults
      """
  }

  static var zsh: String {
    let commands = Help.commands.map { "'\($0.name):\($0.summary.replacingOccurrences(of: "'", with: "'\\''"))'" }
      .joined(separator: " ")
    let (domainCases, fileCases) = argumentCases
    let optionLines = optionCases { "      \($0)) compadd -- \($1); return ;;" }
    return """
      #compdef rdefaults
      # zsh completion for rdefaults: save it as _rdefaults in a folder of $fpath.
      _rdefaults() {
        local -a commands
        commands=(\(commands))
        if (( CURRENT == 2 )); then
          _describe 'command' commands
          compadd -- \(globalOptions)
          return
        fi
        local command=${words[2]} position=$(( CURRENT - 2 ))
        case $command in
          help) (( position == 1 )) && _describe 'command' commands; return ;;
          --generate-completion-script) (( position == 1 )) && compadd bash zsh fish; return ;;
        esac
        if [[ ${words[CURRENT-1]} == --file ]]; then
          _files
          return
        fi
        if [[ ${words[CURRENT]} == --* ]]; then
          case $command in
      \(optionLines)
          esac
        fi
        if [[ $command == write && $position == 3 && ${words[CURRENT]} == -* ]]; then
          compadd -- \(typeFlags)
          return
        fi
        case "$command:$position" in
          \(domainCases.isEmpty ? "none" : domainCases)) compadd -- ${(f)"$(${words[1]} domains 2>/dev/null)"} ;;
          \(fileCases.isEmpty ? "none" : fileCases)) _files ;;
        esac
      }
      _rdefaults "$@"
      """
  }

  static var fish: String {
    var lines = [
      "# fish completion for rdefaults: save it as ~/.config/fish/completions/rdefaults.fish",
      "complete -c rdefaults -f",
    ]
    for command in Help.commands {
      let summary = command.summary.replacingOccurrences(of: "'", with: "\\'")
      lines.append("complete -c rdefaults -n __fish_use_subcommand -a \(command.name) -d '\(summary)'")
    }
    lines.append("complete -c rdefaults -n __fish_use_subcommand -l version -d 'Print the version'")
    lines.append(
      "complete -c rdefaults -n __fish_use_subcommand -l generate-completion-script -xa 'bash zsh fish'")
    lines.append("complete -c rdefaults -n '__fish_seen_subcommand_from help' -xa '\(commandNames)'")
    let domainCommands = Help.commands.filter { $0.completes.first == .domain }.map(\.name).joined(separator: " ")
    lines.append(
      "complete -c rdefaults -n '__fish_seen_subcommand_from \(domainCommands); "
        + "and test (count (commandline -opc)) -eq 2' -xa '(rdefaults domains 2>/dev/null)'")
    lines.append(
      "complete -c rdefaults -n '__fish_seen_subcommand_from write; and test (count (commandline -opc)) -eq 4'"
        + " -xa '\(typeFlags)'")
    for command in Help.commands where command.completes.contains(.file) {
      lines.append("complete -c rdefaults -n '__fish_seen_subcommand_from \(command.name)' -F")
    }
    for command in Help.commands {
      for option in command.options {
        lines.append(
          "complete -c rdefaults -n '__fish_seen_subcommand_from \(command.name)' -l \(option.dropFirst(2))")
      }
      if command.takesFile {
        lines.append("complete -c rdefaults -n '__fish_seen_subcommand_from \(command.name)' -l file -r -F")
      }
    }
    return lines.joined(separator: "\n")
  }
}
