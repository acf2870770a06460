package dev.cohort.libtorch;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashSet;
import java.util.Set;

/**
 * The dynamic symbols of a 64-bit little-endian ELF shared library ({@code .dynsym}), read
 * without loading it: which names it defines, and which it needs from other libraries.
 */
final class ElfSymbols {

    private static final int SHT_DYNSYM = 11;
    private static final int SECTION_HEADER_BYTES = 64;
    private static final int SYMBOL_BYTES = 24;

    private ElfSymbols() {}

    /**
     * The names of {@code library}'s dynamic symbols that it defines ({@code defined}) or that
     * it leaves to other libraries (not {@code defined}).
     *
     * @throws IOException naming the file when it cannot be read or is not a 64-bit
     *                     little-endian ELF file with a dynamic symbol table
     */
    static Set<String> of(Path library, boolean defined) throws IOException {
        try (FileChannel file = FileChannel.open(library, StandardOpenOption.READ)) {
            ByteBuffer header = read(file, library, 0, 64);
            if (header.getInt(0) != 0x464c457f || header.get(4) != 2 || header.get(5) != 1) {
                throw new IOException(library + " is not a 64-bit little-endian ELF file");
            }
            long sectionsAt = header.getLong(0x28);
            int sectionCount = Short.toUnsignedInt(header.getShort(0x3c));
            ByteBuffer sections = read(file, library, sectionsAt, (long) sectionCount * SECTION_HEADER_BYTES);
            for (int i = 0; i < sectionCount; i++) {
                int at = i * SECTION_HEADER_BYTES;
                if (sections.getInt(at + 4) != SHT_DYNSYM) {
                    continue;
                }
                ByteBuffer symbols = read(file, library, sections.getLong(at + 0x18), sections.getLong(at + 0x20));
                int names = sections.getInt(at + 0x28);
                if (names < 0 || names >= sectionCount) {
                    throw new IOException(library + ": its dynamic symbol table names no string table");
                }
                int namesAt = names * SECTION_HEADER_BYTES;
                ByteBuffer strings =
                        read(file, library, sections.getLong(namesAt + 0x18), sections.getLong(namesAt + 0x20));
                Set<String> found = new HashSet<>();
                for (int s = SYMBOL_BYTES; s + SYMBOL_BYTES <= symbols.limit(); s += SYMBOL_BYTES) { // entry 0 is empty
                    boolean isDefined = symbols.getShort(s + 6) != 0;
                    if (isDefined == defined) {
                        found.add(name(strings, symbols.getInt(s)));
                    }
                }
                found.remove("");
                return found;
            }
            throw new IOException(library + " has no dynamic symbol table");
        }
    }

    private static String name(ByteBuffer strings, int from) {
        int end = from;
        while (end < strings.limit() && strings.get(end) != 0) {
            end++;
        }
        byte[] bytes = new byte[end - from];
        strings.get(from, bytes);
        return new String(bytes, StandardCharsets.US_ASCII);
    }

    private static ByteBuffer read(FileChannel file, Path library, long from, long length) throws IOException {
        if (from < 0 || length < 0 || length > Integer.MAX_VALUE || from + length > file.size()) {
            throw new IOException(
                    library + " is not a 64-bit ELF file: bytes " + from + "+" + length + " lie beyond its end");
        }
        ByteBuffer b = ByteBuffer.allocate((int) length).order(ByteOrder.LITTLE_ENDIAN);
        while (b.hasRemaining()) {
            if (file.read(b, from + b.position()) < 0) {
                throw new IOException(library + " ends early");
            }
        }
        return b.flip();
    }
}
