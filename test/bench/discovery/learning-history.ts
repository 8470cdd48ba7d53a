/**
 * The "history" half of the learning evaluation (D22.2): needs that buyers stated in a discover and
 * then bought the named service of the held-out catalog (`heldout-services.ts`) for, each need by
 * a buyer of its own. Its other half, `learning-future.ts`, says the same needs again in other words
 * for later buyers. Both were written before anything was measured on them or any weight of
 * learning was chosen, and are not edited afterwards: they measure, nothing is tuned on them.
 */

export interface LearningCase {
  /** The key of the right service in `HELDOUT_SERVICES`. */
  service: string;
  needs: string[];
}

export const LEARNING_HISTORY: LearningCase[] = [
  // travel
  { service: 'flight-search', needs: ['find me the lowest airfare from Madrid to Oslo in March', 'cheap plane tickets from Chicago to Denver for the weekend', 'compare ticket prices for flying Paris to Montreal round trip'] },
  { service: 'visa-rules', needs: ['does a Brazilian citizen need a visa to visit Canada', 'entry requirements for an Australian travelling to India', 'can I travel to the US on my Nigerian passport without applying for anything'] },
  { service: 'flight-status', needs: ['has flight LH400 taken off on time', 'is BA117 delayed today', 'when will my incoming flight from Dubai actually land'] },
  { service: 'baggage', needs: ['how big can my carry-on be on Ryanair', 'checked luggage fee for a basic economy fare on Delta', 'what weight limit applies to suitcases on a Lufthansa light ticket'] },

  // hiring
  { service: 'salary-bench', needs: ['market pay range for a mid-level product manager in Berlin', 'how much do senior backend developers earn in Toronto', 'compensation percentiles for a staff nurse in Manchester'] },
  { service: 'cv-screen', needs: ['score these resumes against our accountant job requirements', 'shortlist the best candidates for a Python developer role from 200 CVs', 'which applicants meet the must-haves for our sales opening'] },
  { service: 'leave-balance', needs: ['how much annual leave does Maria have left after carry-over', 'remaining sick days for an employee under our accrual policy', 'calculate unused vacation days for staff member 4411'] },

  // real estate
  { service: 'avm', needs: ['estimate the market value of my three bedroom house', 'what could this 80 square metre flat sell for', 'automated price estimate for a property at a given address'] },
  { service: 'rental-yield', needs: ['gross and net return on a buy-to-let costing 300k with 1400 monthly rent', 'is this investment flat profitable after running costs', 'compute the yield of a rental property'] },
  { service: 'comps', needs: ['recently sold homes similar to 5 Oak Road', 'comparable sales near my property with prices', 'what did similar three bed houses nearby go for last year'] },

  // sound and speech
  { service: 'asr', needs: ['transcribe this podcast interview to text', 'convert a voicemail recording into written words', 'speech to text for a recorded meeting in German'] },
  { service: 'voice-synth', needs: ['generate spoken audio from this paragraph', 'make a voiceover of my product description in a female voice', 'narrate an article as an mp3'] },
  { service: 'track-id', needs: ['what is the name of this song I recorded in a bar', 'identify the artist of a tune from a short audio snippet', 'recognize music playing in the background of my video'] },
  { service: 'sheet-music', needs: ['turn my guitar recording into sheet music', 'transcribe a piano performance into notation', 'create a score in MusicXML from an audio file of a melody'] },
  { service: 'vad', needs: ['find where people are speaking in this long recording', 'detect silent parts of an audio file', 'segment a call recording into speech and non-speech'] },

  // vision
  { service: 'handwriting', needs: ['convert my handwritten meeting notes into text', 'read a scanned handwritten letter from my grandmother', 'digitize cursive writing on filled paper forms'] },
  { service: 'print-ocr', needs: ['extract text from a photo of a street sign', 'read the words on a product label image', 'OCR a picture of a printed book page'] },
  { service: 'restore', needs: ['repair a torn and scratched old family photo', 'fix the stains and fading on a scanned vintage picture', 'remove cracks from an old photograph'] },
  { service: 'colorize', needs: ['add colour to a black and white photo of my grandparents', 'colorize an old monochrome picture', 'make a grayscale photograph look like it was shot in colour'] },

  // logistics
  { service: 'parcel-track', needs: ['where is my package with tracking number 1Z999', 'track a DHL shipment and tell me when it arrives', 'status of my parcel sent via USPS'] },
  { service: 'hs-code', needs: ['what customs code applies to cotton t-shirts imported into the EU', 'find the tariff classification for lithium batteries', 'harmonized code and import duty for ceramic mugs to the US'] },
  { service: 'route-opt', needs: ['plan the shortest route for a van visiting 30 addresses', 'optimize delivery stops with time windows for two trucks', 'best order to visit customers to minimise driving'] },

  // software operations
  { service: 'changelog', needs: ['write release notes from the commits since v2.3', 'generate a changelog grouped by features and fixes', 'summarize what changed in this release from git history'] },
  { service: 'commit-msg', needs: ['suggest a commit message for this diff', 'write a conventional commit summary of my staged changes', 'describe these code changes in one commit line'] },
  { service: 'log-anomaly', needs: ['alert me when our application logs show unusual errors', 'detect abnormal spikes in server log messages', 'find new kinds of log lines that never appeared before'] },

  // writing
  { service: 'plagiarism', needs: ['check if this essay was copied from websites', 'find passages in my thesis that match published papers', 'originality check of an article with sources of copied text'] },
  { service: 'ai-detect', needs: ['was this text written by ChatGPT', 'estimate whether an essay is machine generated', 'detect AI-written content in a blog post'] },
  { service: 'tone', needs: ['make this email to my landlord sound more polite', 'rewrite my message so it comes across friendlier', 'soften the tone of a complaint without changing what it says'] },
  { service: 'simplify', needs: ['rewrite this legal paragraph so a child could understand it', 'make a medical leaflet easier to read', 'simplify complicated text into short sentences'] },

  // money
  { service: 'txn-categorize', needs: ['label each line of my bank statement as groceries, rent and so on', 'categorize card transactions by spending type', 'sort my account history into budget categories'] },
  { service: 'reconcile', needs: ['match our ledger against the bank statement and list differences', 'find payments missing from the books compared to the bank', 'bookkeeping reconciliation of March accounts'] },
  { service: 'credit-risk', needs: ['how likely is this supplier company to default next year', 'credit risk rating for a business customer before granting terms', 'assess the default probability of a trading partner'] },
  { service: 'credit-score', needs: ['get my personal credit score from the bureau', 'pull a consumer credit report with consent', 'what factors are hurting my credit rating'] },

  // health
  { service: 'meal-photo', needs: ['how many calories are in the food on this plate photo', 'estimate macros of my lunch from a picture', 'nutrition breakdown from a photo of dinner'] },
  { service: 'lab-explain', needs: ['explain my blood test results in simple terms', 'which of my lab values are out of range', 'what does a high ALT on my blood work mean'] },

  // land and environment
  { service: 'tides', needs: ['when is high tide at Brest tomorrow', 'low and high water times for a harbour on Saturday', 'tide heights at a coastal station this weekend'] },
  { service: 'flight-co2', needs: ['carbon emissions of a flight from London to New York in economy', 'how much CO2 does one passenger emit flying Paris to Tokyo', 'footprint of a business class trip by plane'] },

  // food
  { service: 'fridge-recipes', needs: ['what can I cook with eggs, courgettes and yesterday\'s pasta', 'recipes using only what\'s in my fridge', 'dinner ideas from chicken, peppers and onions'] },
  { service: 'wine-pair', needs: ['which wine goes with grilled salmon', 'recommend a red for beef stew', 'what bottle should I serve with a cheese platter'] },

  // vehicles
  { service: 'vin', needs: ['decode this vehicle identification number', 'what model and year is VIN WVWZZZ1JZXW000001', 'find the engine and factory from a car\'s chassis number'] },
  { service: 'recall', needs: ['does my car have any open safety recalls', 'check recalls for a used car before buying', 'are there unrepaired manufacturer recalls on this VIN'] },
];
