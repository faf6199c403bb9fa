//! [`RowIndex`]: the start offset of every row, 4 bytes a row while the buffer is < 4 GiB.

pub(crate) enum RowIndex {
    U32(Vec<u32>),
    U64(Vec<u64>),
}

impl RowIndex {
    /// An index for a buffer of `buf_len` bytes, with room for `rows` rows.
    pub(crate) fn with_capacity_for(buf_len: usize, rows: usize) -> RowIndex {
        if u32::try_from(buf_len).is_ok() {
            RowIndex::U32(Vec::with_capacity(rows))
        } else {
            RowIndex::U64(Vec::with_capacity(rows))
        }
    }

    /// Appends a row start (switches to 8-byte offsets if one does not fit in 4 bytes).
    #[inline]
    pub(crate) fn push(&mut self, offset: usize) {
        match self {
            RowIndex::U32(v) => match u32::try_from(offset) {
                Ok(o) => v.push(o),
                Err(_) => {
                    let mut wide: Vec<u64> = v.iter().map(|&o| u64::from(o)).collect();
                    wide.push(offset as u64);
                    *self = RowIndex::U64(wide);
                }
            },
            RowIndex::U64(v) => v.push(offset as u64),
        }
    }

    #[inline]
    pub(crate) fn get(&self, row: usize) -> Option<usize> {
        match self {
            RowIndex::U32(v) => v.get(row).map(|&o| o as usize),
            RowIndex::U64(v) => v.get(row).map(|&o| o as usize),
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            RowIndex::U32(v) => v.len(),
            RowIndex::U64(v) => v.len(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn shrink_to_fit(&mut self) {
        match self {
            RowIndex::U32(v) => v.shrink_to_fit(),
            RowIndex::U64(v) => v.shrink_to_fit(),
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            RowIndex::U32(v) => v.capacity() * 4,
            RowIndex::U64(v) => v.capacity() * 8,
        }
    }
}
