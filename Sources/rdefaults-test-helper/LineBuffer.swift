import Dispatch
import Foundation

/// Lines printed by a process, split as its output arrives.
final class LineBuffer: Sendable {
  private let state = Guarded<(lines: [String], partial: Data)>(([], Data()))
  let changed = DispatchSemaphore(value: 0)

  var lines: [String] { state.withLock { $0.lines } }

  func feed(_ data: Data) {
    state.withLock { state in
      state.partial.append(data)
      while let newline = state.partial.firstIndex(of: UInt8(ascii: "\n")) {
        state.lines.append(String(decoding: state.partial[state.partial.startIndex..<newline], as: UTF8.self))
        state.partial.removeSubrange(state.partial.startIndex...newline)
      }
    }
    changed.signal()
  }
}
