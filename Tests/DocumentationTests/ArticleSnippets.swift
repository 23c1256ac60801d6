import Foundation
import Testing

/// Expects every Swift block of a DocC article to stand in a test file word for word (line by line, ignoring
/// indentation and blank lines), so that neither can change without the other.
///
/// - Parameters:
///   - article: The article's file name in `ReactiveDefaults.docc`.
///   - testFile: The test file that compiles and runs the snippets (`#filePath`).
///   - minimum: How many blocks the article has at least (a renamed fence would otherwise check nothing).
func expectSnippets(ofArticle article: String, in testFile: String, atLeast minimum: Int) throws {
  let here = URL(fileURLWithPath: testFile)
  let articleURL = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Sources/ReactiveDefaults/ReactiveDefaults.docc/\(article)")
  let markdown = try String(contentsOf: articleURL, encoding: .utf8)
  let source = try String(contentsOf: here, encoding: .utf8)
  let sourceLines = source.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
    .filter { !$0.isEmpty }
  let blocks = markdown.components(separatedBy: "```swift\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
  #expect(blocks.count >= minimum)
  for block in blocks {
    let lines = block.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    let found = sourceLines.indices.contains { start in
      start + lines.count <= sourceLines.count && Array(sourceLines[start..<(start + lines.count)]) == lines
    }
    #expect(found, "this snippet of \(article) is not in \(here.lastPathComponent):\n\(block)")
  }
}
