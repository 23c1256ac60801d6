// README.md stays a short read whose every link leads somewhere: its size is bounded, every relative link (and image)
// names a file of the repository, and every `#anchor` a heading of the file it points into, as GitHub spells it.
// External links are not followed (the tests run offline).
import Foundation
import Testing

@Suite struct ReadmeLinkTests {
  /// The package's root folder, which holds README.md.
  private var root: URL {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
  }

  @Test func theReadmeIsShort() throws {
    let size = try Data(contentsOf: root.appendingPathComponent("README.md")).count
    #expect(size < 15_000, "README.md is \(size) bytes: what does not fit belongs in a DocC article")
  }

  @Test func everyRelativeLinkResolves() throws {
    let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
    let targets = try Self.linkTargets(in: readme)
    // The articles, the benchmark's files, the chart, a heading: a parser that found nothing would check nothing.
    #expect(targets.count >= 10, "\(targets)")
    for target in targets where !target.contains("://") && !target.hasPrefix("mailto:") {
      let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
      let path = parts[0].removingPercentEncoding ?? parts[0]
      let file = root.appendingPathComponent(path.isEmpty ? "README.md" : path)
      guard FileManager.default.fileExists(atPath: file.path) else {
        Issue.record("README.md links to \(target), which does not exist")
        continue
      }
      if parts.count == 2 {
        let headings = try Self.anchors(of: String(contentsOf: file, encoding: .utf8))
        #expect(headings.contains(parts[1]), "README.md links to \(target): no such heading in \(headings.sorted())")
      }
    }
  }

  /// The targets of the Markdown links and images of `markdown`, outside code blocks and code spans.
  static func linkTargets(in markdown: String) throws -> [String] {
    let text = prose(of: markdown)
    let pattern = try NSRegularExpression(pattern: #"\]\(([^()\s]+)\)"#)
    return pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { match in
      Range(match.range(at: 1), in: text).map { String(text[$0]) }
    }
  }

  /// `markdown` without its fenced blocks and code spans, whose brackets are code, not links.
  static func prose(of markdown: String) -> String {
    var kept: [String] = []
    var inBlock = false
    for line in markdown.components(separatedBy: "\n") {
      if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
        inBlock.toggle()
      } else if !inBlock {
        kept.append(line)
      }
    }
    return kept.joined(separator: "\n").replacingOccurrences(of: "`[^`]*`", with: "", options: .regularExpression)
  }

  /// The anchors GitHub gives the headings of `markdown`: lowercased, spaces as hyphens, other punctuation dropped,
  /// `-1`, `-2`… after a repeated one.
  static func anchors(of markdown: String) -> Set<String> {
    var anchors: Set<String> = []
    var seen: [String: Int] = [:]
    var inBlock = false
    for line in markdown.components(separatedBy: "\n") {
      if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") { inBlock.toggle() }
      let title = line.drop { $0 == "#" }
      guard !inBlock, line.hasPrefix("#"), title.first == " " else { continue }
      var slug = ""
      for character in title.trimmingCharacters(in: .whitespaces).lowercased() {
        if character == " " {
          slug.append("-")
        } else if character.isLetter || character.isNumber || character == "-" || character == "_" {
          slug.append(character)
        }
      }
      let count = seen[slug, default: 0]
      seen[slug] = count + 1
      anchors.insert(count == 0 ? slug : "\(slug)-\(count)")
    }
    return anchors
  }
}
