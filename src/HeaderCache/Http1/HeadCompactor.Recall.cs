using System.Text;
using HeaderCache.Fields;
using HeaderCache.Requests;

namespace HeaderCache.Http1;

// The memo's side of the compactor: a line the connection sent before, byte for byte, is served from the LineMemo while
// the caches still hold its strings, with the caches, the names' histories and the queue left exactly as the long way
// (ReadLine) would leave them.
internal sealed partial class HeadCompactor
{
    // A line the connection sent before is valid and of the same kind. False sends it the long way. The memo already
    // found the line it expected here (found >= 0), else it is searched for.
    private bool TryRecall(ReadOnlySpan<byte> section, ReadOnlySpan<byte> content, int start, int found)
    {
        found = found >= 0 ? found : _memo?.Find(content) ?? -1;
        if (found < 0)
        {
            return false;
        }

        ref readonly LineMemo.Entry entry = ref _memo![found];
        if (entry.Kind == FieldNames.Kept)
        {
            return true;
        }

        if (!_fields.IsNameHeld(entry.Kind, entry.NameSlot, entry.Name))
        {
            return false;
        }

        ReadOnlySpan<byte> name = content[..entry.NameLength];
        ReadOnlySpan<byte> value = content[(name.Length + 2)..];

        // Filled in place in the queue's array: nothing below records another line before this one is recorded.
        ref TakenHeader line = ref Queue.NextLine();
        line = new TakenHeader(start, start + content.Length + 2, name.Length, entry.Key)
        {
            Known = entry.Kind, NameSlot = entry.Kind < 0 ? entry.NameSlot : (short)-1, ValueLength = (ushort)value.Length,
        };
        line.Repeat = IsRepeat(line, name, section);
        line.Name = _fields.RecallName(entry.Kind, entry.NameSlot);
        if (line.Repeat || !_previous.IsReused(line.Known, value, entry.Value))
        {
            line.Value = _fields.RecallValue(entry.History, entry.ValueSlot, entry.Value);
            if (line.Value is null)
            {
                // The cache has let go of the value, or the name's values are created without a lookup now: the value
                // goes the long way, the name as recalled. The bytes were checked when they were remembered.
                line.Value = _fields.ResolveValue(ref line, name, value, out short slot)!;
                Remember(line, slot, content);
            }

            _taken += line.End - line.Start;
        }

        Queue.Record();
        NoteKnownValue(line, value);
        return true;
    }

    // Remembers a line in the plain layout whose strings a later head can be served: its name is Kestrel's constant (sent
    // in its casing) or in the cache of names, and its value is in the cache of values, well-known, or Kestrel's previous
    // string where the caches would keep the value (never one of an excluded name, whose values are never kept). A line
    // whose name or value was just made mostly never comes back.
    private void Remember(in TakenHeader line, short valueSlot, ReadOnlySpan<byte> content)
    {
        string? value = line.Value ?? _previous[line.Known];
        bool named = line.Known >= 0 ? Ascii.Equals(content[..line.NameLength], line.Name!) : line.NameSlot >= 0;
        if (line.Created || value is null || !named
            || (line.Value is not null ? valueSlot == -1 : _fields.CreatesEveryValue(line.Known, line.ValueLength)))
        {
            return;
        }

        _memo?.Remember(
            new LineMemo.Entry
            {
                Name = line.Name!, Value = value, Kind = (sbyte)line.Known, NameSlot = (byte)Math.Max((int)line.NameSlot, 0),
                ValueSlot = valueSlot, Key = line.Key, History = _fields.History(line),
            },
            content);
    }
}
